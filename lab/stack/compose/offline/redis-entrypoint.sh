#!/bin/sh
# As the official image's entrypoint: "redis-server ..." (or options alone) runs Redis with
# protected mode off; anything else runs as given.
case "$1" in
  -*) set -- redis-server "$@" ;;
esac
if [ "$1" = redis-server ]; then
  shift
  exec redis-server "$@" --protected-mode no
fi
exec "$@"
