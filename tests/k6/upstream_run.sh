#!/usr/bin/env bash
# Runs a scenario the way upstream's test/load/scripts/run.sh does as far as its environment goes (our
# own script, not theirs): from a checkout laid out as theirs (this file in test/load/scripts/, the
# scenarios in test/load/k6/), with BENCH_PROJECTS_FILE passed to k6 and defaulting to the checkout's
# test/load/data/projects.json. Usage: upstream_run.sh SCENARIO
set -euo pipefail
scenario="$1"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../../.." && pwd)"
exec "${K6_BIN:-k6}" run --quiet --no-usage-report \
    -e "BENCH_PROJECTS_FILE=${BENCH_PROJECTS_FILE:-${root}/test/load/data/projects.json}" \
    "${root}/test/load/k6/${scenario}.js"
