#!/usr/bin/env bash
# Run a command with every core kept busy beside it -- the loaded machine a CI run may meet.
#   scripts/under_load.sh CMD...      HOG_CPUS=N busy loops (default: all cores), then CMD
# The busy loops are plain shell loops in a process group of their own, stopped when CMD ends,
# fails or is interrupted; the exit status is CMD's.
set -uo pipefail

n=${HOG_CPUS:-$(nproc)}
case $n in '' | *[!0-9]*) echo "[load] HOG_CPUS=$n: give a whole number of busy loops (e.g. HOG_CPUS=$(nproc))" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "[load] usage: scripts/under_load.sh CMD... (e.g. make test-loaded)" >&2; exit 2; }

# setsid: the loops' own group, so one kill stops all of them and a Ctrl-C meant for CMD does
# not leave them spinning.
setsid bash -c "for _ in \$(seq $n); do ( while :; do :; done ) & done; wait" &
hogs=$!
stop() { kill -TERM -- "-$hogs" 2>/dev/null; wait "$hogs" 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "[load] $n busy loops beside: $* (load before: $(cut -d' ' -f1-3 /proc/loadavg))"
"$@"
rc=$?
echo "[load] done (exit $rc); load average $(cut -d' ' -f1-3 /proc/loadavg)"
exit $rc
