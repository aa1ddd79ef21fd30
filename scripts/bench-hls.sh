#!/usr/bin/env bash
# bench-hls.sh: HLS packaging per frame against MP4 file output, in one run.
#
# Builds mux/hls's test binary once and runs BenchmarkPackaging RUNS times
# (default 7) in each place: the disk (a temp dir; ext4 on this project's
# machines) and a tmpfs (/dev/shm), alternating. Each run is one process
# that packages the same h264+aac media as an MP4 file ("mp4-file") and as
# an HLS+DASH package in a directory ("hls", through hls.DirStore, what
# -f hls writes: one media file per rendition, segments named by byte
# range), OUTPUTS new outputs (default 8) of each, each closed inside the
# time; neither fsyncs. It does so for outputs of each length of LENGTHS,
# in 4 s passes (default "16 150": 64 s and 10 minutes).
#
# What an output costs is a cost per frame plus a cost per output paid
# once (creating its files, finishing it): cpu(L) = fixed + L x per_frame
# for an output of L frames. Two lengths separate them: the script fits
# the line to each run's CPU time (the process's user+system time, much
# less moved by other load than the wall time) and prints, per place, the
# median per-frame cost of each output and their ratio hls/mp4-file (the
# target of issue #31 is at most 1.25), the median fixed cost of each, and
# the plain ratio of each length (what a run of that length measures, the
# fixed cost spread over its frames). Why the disk's fixed cost is larger
# and moves with the machine's past: docs/hls.md, Cost.
#
#   scripts/bench-hls.sh                          # disk and /dev/shm
#   DIRS=/dev/shm scripts/bench-hls.sh            # one place (or several)
#   RUNS=15 OUTPUTS=12 scripts/bench-hls.sh
#   LONG=900 scripts/bench-hls.sh                 # also 1-hour outputs (LONG_OUTPUTS, default 2), not fitted
#   BIN=/path/to/hls.test scripts/bench-hls.sh    # a test binary built before
#   KEEP=1 scripts/bench-hls.sh                   # outputs removed at the end only
#   PAIRED=1 RUNS=5 LONG=900 scripts/bench-hls.sh # the two interleaved (below)
#
# LONG lists longer lengths measured against what the fit predicts for
# them: a package rewrites its manifests whole at each boundary, so at an
# hour its per-frame cost is above the line of the shorter ones.
#
# KEEP=1 leaves each run's outputs until the script ends (MOQ_BENCH_KEEP),
# instead of removing them when the run ends: on an ext4 without a
# journal (this project's machines) a new inode is allocated past every
# inode of its block group freed in the last minute or more (six while
# its inode table block is dirty), so the removals of one run make the
# file creations of the next cost more.
# PAIRED=1 runs BenchmarkPairedPackaging instead: in each run both outputs
# are open at once and each 4 s pass of the media goes into one and then
# the other, the process's CPU time read around each pass. BenchmarkPackaging
# measures the two seconds apart, and on these virtual machines what the
# kernel's part of a frame costs (copying it into the page cache, mostly)
# moves by 2x from one second to the next: that, not the packaging, made
# the per-frame ratio of one run anything from 0.9 to 1.7 (docs/hls.md,
# Cost). Per place and length it prints the ratio hls/mp4-file of the CPU
# per frame of the passes that neither open nor close an output (what a
# frame costs while recording, the collector's cycles shared by what each
# allocated), of the median pass (the machine at its fastest moments: the
# manifests' fixed work per boundary weighs most there), and of all
# passes, opening and closing included. BIN must hold the benchmark (for
# an older commit: its tree with this one's mux/hls/benchpair_test.go).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-7}
OUTPUTS=${OUTPUTS:-8}
LENGTHS=${LENGTHS:-"16 150"}
LONG=${LONG:-}
LONG_OUTPUTS=${LONG_OUTPUTS:-2}
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
declare -A parent
if [ -n "${KEEP:-}" ]; then
	for d in $DIRS; do
		if [ "$d" = disk ]; then parent[$d]=$(mktemp -d); else parent[$d]=$(mktemp -d "$d/bench-hls.XXXXXX"); fi
		keep+=("${parent[$d]}")
	done
fi
# run_env PLACE PASSES sets env, the benchmark's environment for outputs
# of PASSES passes in PLACE, and n, how many outputs a run makes.
run_env() {
	env=(MOQ_BENCH_PASSES="$2")
	[ "$1" != disk ] && env+=(MOQ_BENCH_DIR="$1")
	[ -n "${KEEP:-}" ] && env+=(MOQ_BENCH_DIR="${parent[$1]}" MOQ_BENCH_KEEP=1)
	n=$OUTPUTS
	[[ " $LONG " == *" $2 "* ]] && n=$LONG_OUTPUTS
	return 0
}
if [ -n "${PAIRED:-}" ]; then
	res=$bin/results
	: >"$res"
	printf '%-9s %-4s %7s %10s %10s %9s %9s %9s\n' where run length 'mp4 ns/fr' 'hls ns/fr' 'ratio' 'median' 'all'
	for i in $(seq "$RUNS"); do
		for d in $DIRS; do
			for p in $LENGTHS $LONG; do
				run_env "$d" "$p"
				out=$(cd "$bin" && env "${env[@]}" ./hls.test -test.run '^$' -test.bench '^BenchmarkPairedPackaging$' -test.benchtime "$((n * p))x")
				line=$(awk -v d="$d" -v i="$i" -v p="$p" '
					/BenchmarkPairedPackaging/ {
						for (j = 2; j <= NF; j++) v[$j] = $(j-1)
						print d, i, p, v["mp4-file-plain-ns/frame"], v["hls-plain-ns/frame"], v["ratio-per-frame"], v["ratio-median-pass"], v["ratio-all"]
					}' <<<"$out")
				[ -n "$line" ] || { echo "bench-hls: no BenchmarkPairedPackaging in $BIN? $out" >&2; exit 1; }
				echo "$line" >>"$res"
				awk -v line="$line" 'BEGIN {
					split(line, f, " ")
					L = f[3] * 4
					len = L >= 3600 ? sprintf("%gh", L / 3600) : L >= 120 ? sprintf("%gm", L / 60) : sprintf("%gs", L)
					printf "%-9s %-4s %7s %10.0f %10.0f %9.3f %9.3f %9.3f\n", f[1], f[2], len, f[4], f[5], f[6], f[7], f[8]
				}'
			done
		done
	done
	awk '
		function median(s,   a, n, t, i, j) {
			n = split(s, a, " ")
			for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
			return sprintf("%.2f (min %.2f, max %.2f, %d runs)", a[int((n + 1) / 2)], a[1], a[n], n)
		}
		{
			k = $1 SUBSEP $3
			if (!(k in seen)) { seen[k] = 1; order[++nk] = k }
			mp[k] = mp[k] " " $4; hl[k] = hl[k] " " $5; r[k] = r[k] " " $6; m[k] = m[k] " " $7; al[k] = al[k] " " $8
		}
		END {
			for (q = 1; q <= nk; q++) {
				k = order[q]; split(k, f, SUBSEP)
				L = f[2] * 4
				len = L >= 3600 ? sprintf("%g h", L / 3600) : L >= 120 ? sprintf("%g min", L / 60) : sprintf("%g s", L)
				printf "%s: %s outputs, paired, cpu per frame ratio hls/mp4-file: %s\n", f[1], len, median(r[k])
				printf "%s: %s outputs, paired, median pass ratio:               %s\n", f[1], len, median(m[k])
				printf "%s: %s outputs, paired, all passes ratio (open, close):   %s\n", f[1], len, median(al[k])
				printf "%s: %s outputs, paired, cpu ns per frame: mp4-file %s; hls %s\n", f[1], len, median(mp[k]), median(hl[k])
			}
		}' "$res"
	echo "paired; outputs a run: $OUTPUTS (LONG: $LONG_OUTPUTS); load: $(cut -d' ' -f1-3 /proc/loadavg)"
	exit 0
fi
# Frames in one 4 s pass of the sample media.
pass=$(cd "$bin" && MOQ_BENCH_DIR=$bin MOQ_BENCH_PASSES=1 ./hls.test -test.run '^$' -test.bench '^BenchmarkPackaging$/^mp4-file$' -test.benchtime 1x |
	awk '/BenchmarkPackaging/ {for (i = 1; i <= NF; i++) if ($i == "frames/output") print int($(i-1))}')
if [ -z "$pass" ]; then
	echo "bench-hls: the benchmark reports no frames/output (a binary from before 2026-12-02?)" >&2
	exit 1
fi
res=$bin/results
: >"$res"
printf '%-9s %-4s %7s %12s %12s %7s %12s %12s %7s\n' where run length 'mp4 ns' 'hls ns' ratio 'mp4 cpu-ns' 'hls cpu-ns' ratio
for i in $(seq "$RUNS"); do
	for d in $DIRS; do
		for p in $LENGTHS $LONG; do
			run_env "$d" "$p"
			frames=$((n * p * pass))
			out=$(cd "$bin" && env "${env[@]}" ./hls.test -test.run '^$' -test.bench '^BenchmarkPackaging$/^(mp4-file|hls)$' -test.benchtime "${frames}x")
			line=$(awk -v d="$d" -v i="$i" -v p="$p" -v n="$frames" '
				/BenchmarkPackaging\/(mp4-file|hls)-/ {
					k = ($1 ~ /mp4-file/) ? "mp4" : "hls"
					for (j = 1; j <= NF; j++) {
						if ($j == "ns/op") w[k] = $(j-1)
						if ($j == "cpu-ns/op") c[k] = $(j-1)
						if ($j == "outputs") o[k] = $(j-1)
					}
				}
				END { print d, i, p, n, w["mp4"], w["hls"], c["mp4"], c["hls"], o["mp4"], o["hls"] }' <<<"$out")
			echo "$line" >>"$res"
			awk -v line="$line" 'BEGIN {
				split(line, f, " ")
				L = f[3] * 4
				len = L >= 3600 ? sprintf("%gh", L / 3600) : L >= 120 ? sprintf("%gm", L / 60) : sprintf("%gs", L)
				printf "%-9s %-4s %7s %12s %12s %7.2f %12s %12s %7.2f\n", f[1], f[2], len, f[5], f[6], f[6] / f[5], f[7], f[8], f[8] / f[7]
			}'
		done
	done
done
# The fit, per place and run: y = per_frame + fixed x, y the CPU ns per
# frame of a length, x its outputs per frame (least squares over LENGTHS).
awk -v fit=" $LENGTHS " -v long=" $LONG " -v dirs="$DIRS" '
	function median(s,   a, n, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return sprintf("%.2f (min %.2f, max %.2f, %d runs)", a[int((n + 1) / 2)], a[1], a[n], n)
	}
	function med(s,   a, n, t) {
		n = split(s, a, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return a[int((n + 1) / 2)]
	}
	{
		d = $1; r = $2; p = $3; n = $4
		ratio[d, p] = ratio[d, p] " " $8 / $7
		wratio[d, p] = wratio[d, p] " " $6 / $5
		if (index(fit, " " p " ")) {
			for (k = 0; k < 2; k++) {
				y = $(7 + k); x = $(9 + k) / n
				key = d SUBSEP r SUBSEP k
				sx[key] += x; sy[key] += y; sxx[key] += x * x; sxy[key] += x * y; cnt[key]++
				runs[d] = runs[d] (index(runs[d], " " r " ") ? "" : " " r " ")
			}
		} else {
			ly[d, r, p, 0] = $7; ly[d, r, p, 1] = $8; xl[d, p] = $9 / n
		}
		lens[d] = lens[d] (index(lens[d], " " p " ") ? "" : " " p " ")
	}
	END {
		nd = split(dirs, D, " ")
		for (q = 1; q <= nd; q++) {
			d = D[q]
			nr = split(runs[d], R, " ")
			slope[0] = slope[1] = fixed[0] = fixed[1] = sr = ""
			for (t = 1; t <= nr; t++) {
				for (k = 0; k < 2; k++) {
					key = d SUBSEP R[t] SUBSEP k
					m = cnt[key]
					den = m * sxx[key] - sx[key] * sx[key]
					if (m < 2 || den == 0) continue
					b = (m * sxy[key] - sx[key] * sy[key]) / den
					a[k] = (sy[key] - b * sx[key]) / m
					slope[k] = slope[k] " " a[k]; fixed[k] = fixed[k] " " b / 1000
					A[d, R[t], k] = a[k]; B[d, R[t], k] = b
				}
				if (a[0] > 0) sr = sr " " a[1] / a[0]
			}
			np = split(lens[d], P, " ")
			for (u = 1; u <= np; u++) {
				p = P[u]; L = p * 4
				len = L >= 3600 ? sprintf("%g h", L / 3600) : L >= 120 ? sprintf("%g min", L / 60) : sprintf("%g s", L)
				printf "%s: %s outputs, ratio hls/mp4-file, cpu:  %s\n", d, len, median(ratio[d, p])
				printf "%s: %s outputs, ratio hls/mp4-file, wall: %s\n", d, len, median(wratio[d, p])
			}
			if (sr == "") continue
			printf "%s: per frame (the line through the lengths of%spasses), cpu ns: mp4-file %.0f, hls %.0f; ratio hls/mp4-file: %s\n", d, fit, med(slope[0]), med(slope[1]), median(sr)
			printf "%s: per output, fixed, cpu µs: mp4-file %.0f, hls %.0f (medians; hls less mp4-file %.0f µs)\n", d, med(fixed[0]), med(fixed[1]), med(fixed[1]) - med(fixed[0])
			for (u = 1; u <= np; u++) {
				p = P[u]
				if (index(fit, " " p " ")) continue
				g = ""
				for (t = 1; t <= nr; t++) {
					if (!((d, R[t], 0) in A)) continue
					for (k = 0; k < 2; k++) pred[k] = A[d, R[t], k] + B[d, R[t], k] * xl[d, p]
					g = g " " ly[d, R[t], p, 1] / pred[1]
				}
				L = p * 4
				len = L >= 3600 ? sprintf("%g h", L / 3600) : L >= 120 ? sprintf("%g min", L / 60) : sprintf("%g s", L)
				printf "%s: %s outputs, hls cpu per frame over what the line predicts: %s\n", d, len, median(g)
			}
		}
	}' "$res"
echo "frames a pass: $pass; outputs a run: $OUTPUTS; load: $(cut -d' ' -f1-3 /proc/loadavg)"
