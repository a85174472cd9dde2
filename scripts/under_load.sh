#!/usr/bin/env bash
# Run a command beside a load on the machine -- the loaded machine a CI run may meet.
#   scripts/under_load.sh CMD...
#   LOAD=cpu (default)  HOG_CPUS=N busy loops (default: one per core)
#   LOAD=ci             a shared CI runner: the busy loops, plus a parallel build in a loop (go build
#                       -a std with a fresh GOCACHE each round; without Go, gcc -O2 on generated C
#                       files, one per core at a time), plus a disk writer (DISK_MB, default 256,
#                       written with direct I/O and fsync, again and again), plus memory held and
#                       touched (MEM_MB, default a quarter of MemTotal). LOAD_DIR: where its files
#                       go (default /var/tmp: on disk, where /tmp may be RAM).
# The load runs in a process group of its own, stopped -- and its files removed -- when CMD ends,
# fails or is interrupted (a watchdog in the group also stops it if this script is killed); the
# exit status is CMD's.
set -uo pipefail

load=${LOAD:-cpu}
n=${HOG_CPUS:-$(nproc)}
mem_total_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024))
mem_mb=${MEM_MB:-$((mem_total_mb / 4))}
disk_mb=${DISK_MB:-256}
for var in "HOG_CPUS=$n" "MEM_MB=$mem_mb" "DISK_MB=$disk_mb"; do
	case ${var#*=} in '' | *[!0-9]*) echo "[load] $var: give a whole number (e.g. HOG_CPUS=$(nproc), MEM_MB=2048, DISK_MB=256)" >&2; exit 2 ;; esac
done
case $load in cpu | ci) ;; *) echo "[load] LOAD=$load: give LOAD=cpu (busy loops) or LOAD=ci (busy loops, a build, disk and memory)" >&2; exit 2 ;; esac
[ $# -gt 0 ] || { echo "[load] usage: [LOAD=cpu|ci] scripts/under_load.sh CMD... (e.g. make test-loaded LOAD=ci)" >&2; exit 2; }
if [ "$mem_mb" -gt $((mem_total_mb / 2)) ]; then
	echo "[load] MEM_MB=$mem_mb is more than half of this machine's $mem_total_mb MB: the command needs memory too; give at most $((mem_total_mb / 2))" >&2
	exit 2
fi

go=$(command -v go || echo /usr/local/go/bin/go)
[ -x "$go" ] || go=
before=$(cut -d' ' -f1-3 /proc/loadavg)
dir=$(mktemp -d "${LOAD_DIR:-/var/tmp}/under-load.XXXXXX") || { echo "[load] cannot make a folder in ${LOAD_DIR:-/var/tmp}: set LOAD_DIR to a writable folder on disk" >&2; exit 2; }
trap 'rm -rf "$dir"' EXIT  # until the load runs; then stop() below

# The load, as a script of its own: run with setsid below, so one kill of its group stops all of
# it (a build's compilers, dd, the memory holder) and a Ctrl-C meant for CMD does not reach it.
cat >"$dir/load.sh" <<'EOF'
set -u
dir=$1 load=$2 n=$3 mem_mb=$4 disk_mb=$5 owner=$6 go=$7
# If the script that started us is killed outright (no trap runs), stop the group and remove
# our files anyway, once the owner is gone or a zombie (its parent may be waiting for our
# output to end before it reaps it). Polled each second: the owner is no child of ours.
running_but() {  # live members of this group (zombies hold nothing) but pid $1 and this one
	local p s
	for p in $(pgrep -g $$); do
		s=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) || continue
		[ "$p" = "$1" ] || [ "$p" = "$BASHPID" ] || [ "$s" = Z ] || echo "$p"
	done
}
(while s=$(cut -d' ' -f3 "/proc/$owner/stat" 2>/dev/null) && [ "$s" != Z ]; do sleep 1; done
	me=$BASHPID
	# The others first, then the files (a go build still writing would refill the folder).
	for _ in $(seq 50); do
		others=$(running_but "$me")
		[ -n "$others" ] || break
		kill -KILL $others 2>/dev/null
		sleep 0.1
	done
	rm -rf "$dir") &
for _ in $(seq "$n"); do (while :; do :; done) & done
if [ "$load" = ci ]; then
	if [ -n "$go" ]; then
		# A fresh cache each round: every package of the standard library compiled again, in
		# parallel (go build runs one compiler per core), and the cache written to disk.
		# GOTMPDIR: its work folders in ours too (a killed go build leaves its /tmp/go-build*).
		mkdir -p "$dir/gotmp"
		(while :; do
			rm -rf "$dir/gocache"
			GOCACHE="$dir/gocache" GOTMPDIR="$dir/gotmp" GOFLAGS= "$go" build -a std >/dev/null 2>>"$dir/build.log" || exit
		done) &
	else
		mkdir -p "$dir/c"
		for i in $(seq $((4 * $(nproc)))); do
			{
				echo "double f$i(double x) { double s = 0;"
				for j in $(seq 300); do echo "  for (int k = 0; k < $j; k++) s += (x * $j + k) / (k + $i.0);"; done
				echo "  return s; }"
			} >"$dir/c/f$i.c"
		done
		(while :; do printf '%s\n' "$dir"/c/*.c | xargs -P "$(nproc)" -I{} gcc -O2 -c {} -o {}.o || exit; rm -f "$dir"/c/*.o; done) &
	fi
	# Direct I/O where the file system has it, else fsync'd writes through the page cache.
	(while :; do
		dd if=/dev/zero of="$dir/disk.bin" bs=1M count="$disk_mb" oflag=direct conv=fsync status=none 2>/dev/null ||
			dd if=/dev/zero of="$dir/disk.bin" bs=1M count="$disk_mb" conv=fsync status=none || exit
		rm -f "$dir/disk.bin"
	done) &
	# Memory held and touched (one byte per page, every second) so the kernel cannot reclaim it.
	py=$(command -v /usr/bin/python3 python3 | head -1)
	"$py" -c '
import sys, time
n = int(sys.argv[1]) << 20
buf = bytearray(n)
pages = len(range(0, n, 4096))
v = 0
while True:
    v = (v + 1) % 256
    buf[::4096] = bytes([v]) * pages
    time.sleep(1)
' "$mem_mb" &
fi
wait
EOF

setsid bash "$dir/load.sh" "$dir" "$load" "$n" "$mem_mb" "$disk_mb" "$$" "$go" &
group=$!

stop() {
	local status=$?  # in the EXIT trap: CMD's, or 130/143 after a signal
	trap - EXIT INT TERM
	echo "[load] done (exit $status); load average now: $(cut -d' ' -f1-3 /proc/loadavg) (before: $before); stopping the load"
	kill -TERM -- "-$group" 2>/dev/null
	# Bounded: a compiler or dd may take a moment to exit; SIGKILL what outlives 10 s. Zombies
	# do not count: they hold nothing, and whoever inherited them reaps them in its own time.
	for _ in $(seq 100); do pgrep -g "$group" -r D,R,S,T,t,I >/dev/null || break; sleep 0.1; done
	kill -KILL -- "-$group" 2>/dev/null
	wait "$group" 2>/dev/null
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$load" = ci ]; then
	builder=${go:+go build -a std (fresh GOCACHE each round)}
	builder=${builder:-gcc -O2 on generated C files, $(nproc) at a time}
	what="$n busy loops, $builder, dd of $disk_mb MB (direct I/O, fsync) in a loop, $mem_mb MB held and touched; files in $dir"
else
	what="$n busy loops"
fi
echo "[load] LOAD=$load: $what; process group $group; beside: $* (load average before: $before)"
"$@"
exit $?
