#!/usr/bin/env bash
# Idempotent set-up of a fresh machine for exectl's tests and demo: packages, the Docker engine, the test
# database servers on loopback, and the fixture images (nothing can be pulled here: sandbox.md).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/packages.sh
bash scripts/services.sh
bash scripts/dockerd.sh
bash images/build.sh
