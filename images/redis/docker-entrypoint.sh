#!/bin/sh
# Like the official redis image: options or a .conf as first argument mean redis-server; the server runs as
# user redis (it writes /data, e.g. with --appendonly yes).
set -eu
case "${1:-}" in
  -*|*.conf) set -- redis-server "$@" ;;
esac
if [ "${1:-}" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data 2>/dev/null || true
  exec setpriv --reuid=redis --regid=redis --init-groups "$@"
fi
exec "$@"
