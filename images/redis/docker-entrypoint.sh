#!/bin/sh
# Like the official redis image: options or a .conf as first argument mean redis-server; the server runs as
# user redis (it writes /data, e.g. with --appendonly yes).
set -eu
case "${1:-}" in
  -*|*.conf) set -- redis-server "$@" ;;
esac
# The official image builds redis with protected mode off (pointless behind Docker's networking, and it
# refuses every other container); do the same unless the command line or a config file decides.
if [ "${1:-}" = redis-server ]; then
  case " $* " in
    *" --protected-mode "*|*.conf\ *) ;;
    *) set -- "$@" --protected-mode no ;;
  esac
fi
if [ "${1:-}" = redis-server ] && [ "$(id -u)" = 0 ]; then
  chown -R redis:redis /data 2>/dev/null || true
  exec setpriv --reuid=redis --regid=redis --init-groups "$@"
fi
exec "$@"
