#!/usr/bin/env bash
# bench-hls.sh: HLS packaging per frame against MP4 file output, in one run.
#
# Builds mux/hls's test binary once and runs BenchmarkPackaging RUNS times
# (default 7) in each place: the disk (a temp dir; ext4 on this project's
# machines) and a tmpfs (/dev/shm), alternating. Each run is one process
# that packages the same h264+aac media (64 s per output unless
# MOQ_BENCH_PASSES says how many 4 s passes, new outputs, closes inside the
# time) as an MP4 file ("mp4-file") and as an HLS+DASH package in a
# directory ("hls", through hls.DirStore, what -f hls writes: one media
# file per rendition, segments named by byte range); neither fsyncs. It
# prints each run's wall ns/frame and CPU ns/frame (the process's
# user+system time) and their ratios hls/mp4-file, then the median ratios
# of each place. The target (issue #31) is a ratio of at most 1.25.
#
#   scripts/bench-hls.sh                          # disk and /dev/shm
#   DIRS=/dev/shm scripts/bench-hls.sh            # one place (or several)
#   RUNS=15 FRAMES=80000 scripts/bench-hls.sh
#   MOQ_BENCH_PASSES=150 FRAMES=200000 scripts/bench-hls.sh   # 10-minute outputs
#   BIN=/path/to/hls.test scripts/bench-hls.sh    # a test binary built before
#   KEEP=1 scripts/bench-hls.sh                   # outputs removed at the end only
#
# KEEP=1 leaves each run's outputs until the script ends (MOQ_BENCH_KEEP),
# instead of removing them when the run ends: on an ext4 without a
# journal (this project's machines) a new inode is allocated past every
# inode of its block group freed in the last minute or more (six while
# its inode table block is dirty), so the removals of one run make the
# file creations of the next cost more, HLS's 13 new inodes a package
# 13 times more than MP4's one (docs/hls.md, Cost).
#
# On a shared machine the wall time moves from run to run with the other
# load; the CPU time much less.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
FRAMES=${FRAMES:-40000}
bin=$(mktemp -d)
keep=()
trap 'rm -rf "$bin" "${keep[@]}"' EXIT
if [ -n "${BIN:-}" ]; then
	cp "$BIN" "$bin/hls.test"
else
	go test -c -o "$bin/hls.test" ./mux/hls
fi
if [ -z "${DIRS:-}" ]; then
	DIRS="disk"
	[ -d /dev/shm ] && DIRS="$DIRS /dev/shm"
fi
declare -A wall cpu parent
if [ -n "${KEEP:-}" ]; then
	for d in $DIRS; do
		if [ "$d" = disk ]; then parent[$d]=$(mktemp -d); else parent[$d]=$(mktemp -d "$d/bench-hls.XXXXXX"); fi
		keep+=("${parent[$d]}")
	done
fi
printf '%-9s %-4s %12s %12s %7s %12s %12s %7s\n' where run 'mp4 ns' 'hls ns' ratio 'mp4 cpu-ns' 'hls cpu-ns' ratio
for i in $(seq "$RUNS"); do
	for d in $DIRS; do
		env=()
		[ "$d" != disk ] && env=(MOQ_BENCH_DIR="$d")
		[ -n "${KEEP:-}" ] && env=(MOQ_BENCH_DIR="${parent[$d]}" MOQ_BENCH_KEEP=1)
		out=$(cd "$bin" && env "${env[@]}" ./hls.test -test.run '^$' -test.bench 'BenchmarkPackaging/(mp4-file|hls)$' -test.benchtime "${FRAMES}x")
		read -r mw mc < <(awk '/BenchmarkPackaging\/mp4-file/ {for (i = 1; i <= NF; i++) {if ($i == "ns/op") w = $(i-1); if ($i == "cpu-ns/op") c = $(i-1)}; print w, c}' <<<"$out")
		read -r hw hc < <(awk '/BenchmarkPackaging\/hls-/ {for (i = 1; i <= NF; i++) {if ($i == "ns/op") w = $(i-1); if ($i == "cpu-ns/op") c = $(i-1)}; print w, c}' <<<"$out")
		rw=$(awk -v a="$hw" -v b="$mw" 'BEGIN {printf "%.2f", a / b}')
		rc=$(awk -v a="$hc" -v b="$mc" 'BEGIN {printf "%.2f", a / b}')
		wall[$d]="${wall[$d]:-} $rw"
		cpu[$d]="${cpu[$d]:-} $rc"
		printf '%-9s %-4s %12s %12s %7s %12s %12s %7s\n' "$d" "$i" "$mw" "$hw" "$rw" "$mc" "$hc" "$rc"
	done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {printf "%s (min %s, max %s, %d runs)", a[int((NR + 1) / 2)], a[1], a[NR], NR}'; }
for d in $DIRS; do
	# shellcheck disable=SC2086
	echo "$d: median ratio hls/mp4-file, wall: $(median ${wall[$d]})"
	# shellcheck disable=SC2086
	echo "$d: median ratio hls/mp4-file, cpu:  $(median ${cpu[$d]})"
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
