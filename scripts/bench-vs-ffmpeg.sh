#!/usr/bin/env bash
# bench-vs-ffmpeg.sh: export the same media with moq-export and with
# `ffmpeg -c copy` into the same container and print the throughput ratio.
#
# moq-export records its demo broadcast published in process as fast as it
# can (--demo-fast --demo-loops N: N loops of the 4 s H.264 + AAC samples,
# model -> jitter -> export -> muxer -> file, no network). ffmpeg remuxes a
# file holding the same media (written once by moq-export) into the same
# container. Both write to a temporary directory; each run is repeated and
# the fastest kept, and every output is checked to hold every frame.
# The default jitter delay is kept: the engine never declares a track idle
# while it still has unread data, so a burst far faster than real time
# loses nothing (the frame check below would fail).
#
#   scripts/bench-vs-ffmpeg.sh              # mkv, 450 loops (30 min of media)
#   FORMAT=ts LOOPS=300 RUNS=5 scripts/bench-vs-ffmpeg.sh
#   FORMAT=mp4 scripts/bench-vs-ffmpeg.sh   # finished MP4 vs ffmpeg -c copy -f mp4
set -euo pipefail

FORMAT=${FORMAT:-mkv}
LOOPS=${LOOPS:-450}
RUNS=${RUNS:-3}
case $FORMAT in
mkv) ffformat=matroska ;;
ts) ffformat=mpegts ;;
flv) ffformat=flv ;;
mp4) ffformat=mp4 ;; # moq-export's time includes the finish into a regular MP4
*) echo "FORMAT must be mkv, ts, flv or mp4" >&2; exit 2 ;;
esac
command -v ffmpeg >/dev/null || { echo "ffmpeg is not installed" >&2; exit 1; }

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/moq-export" ./cmd/moq-export

export_once() {
	"$tmp/moq-export" --demo-fast --demo-loops "$LOOPS" --progress never -y -f "$FORMAT" -o "$1" 2>/dev/null
}
now() { date +%s.%N; }

# Packets per stream (MPEG-TS lists its streams twice, under the program too).
count() { ffprobe -v error -count_packets -show_entries stream=index,nb_read_packets -of csv=p=0 "$1" | sort -u | awk -F, '{n += $2} END {print n}'; }
want=$((LOOPS * 309)) # 120 video + 189 audio frames per loop
check() {
	local got
	got=$(count "$1")
	if [ "$got" -ne "$want" ]; then
		echo "$1 holds $got packets, want $want: frames were lost" >&2
		exit 1
	fi
}

# The source file ffmpeg reads: the same media.
export_once "$tmp/src.$FORMAT"
check "$tmp/src.$FORMAT"
packets=$want
media=$((LOOPS * 4))

best_moq=1e9
best_ff=1e9
for _ in $(seq "$RUNS"); do
	t0=$(now)
	export_once "$tmp/moq.$FORMAT"
	t1=$(now)
	ffmpeg -nostdin -v error -y -i "$tmp/src.$FORMAT" -map 0 -c copy -f "$ffformat" "$tmp/ff.$FORMAT"
	t2=$(now)
	best_moq=$(awk -v a="$t0" -v b="$t1" -v best="$best_moq" 'BEGIN {d = b - a; print (d < best ? d : best)}')
	best_ff=$(awk -v a="$t1" -v b="$t2" -v best="$best_ff" 'BEGIN {d = b - a; print (d < best ? d : best)}')
done

check "$tmp/moq.$FORMAT"
check "$tmp/ff.$FORMAT"
size_moq=$(stat -c %s "$tmp/moq.$FORMAT")
size_ff=$(stat -c %s "$tmp/ff.$FORMAT")
report() { # name seconds bytes
	awk -v n="$1" -v s="$2" -v b="$3" -v m="$media" \
		'BEGIN {printf "%-10s %7.3f s  %8.1f MB/s  %7.0fx realtime  (%d bytes)\n", n, s, b / s / 1e6, m / s, b}'
}
echo "$FORMAT, $LOOPS loops = ${media}s of H.264+AAC, $packets frames, best of $RUNS"
report moq-export "$best_moq" "$size_moq"
report ffmpeg "$best_ff" "$size_ff"
awk -v m="$best_moq" -v f="$best_ff" 'BEGIN {printf "throughput ratio moq-export/ffmpeg (media per second): %.2f\n", f / m}'
