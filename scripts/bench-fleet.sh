#!/usr/bin/env bash
# bench-fleet.sh: what a recording costs at fleet scale, end to end over QUIC.
#
# For each N, one publisher process (tools/fleetpub) serves N demo
# broadcasts (H.264+AAC test media, real time) on loopback QUIC, and one
# `moq-export URL --record-all` process dials it and records every
# broadcast to its own MKV file. The media starts once every recording has
# opened its file, so each one takes its broadcast from the first frame;
# the broadcasts start one after another over RAMP (2s), not in one instant.
# After WARMUP seconds the recorder's CPU time (utime+stime from
# /proc/PID/stat) is read over WINDOW seconds; then its RSS (VmRSS), its
# goroutines (from its Go profile endpoint, MOQ_EXPORT_PPROF) and its OS
# threads. Then the publisher ends every broadcast, each recording finishes
# its file, and the frames the recorder wrote are compared with the frames
# the publisher published: lost must be 0. A few files are decoded with
# ffprobe to check their frame counts. "pub cpu%" is the publisher's CPU
# over the same window (it shares the machine). "close s" is how long after the last
# broadcast ended the last file was finished (polled every 0.2 s).
#
# CPU time per process is what is measured, not wall time: the machine may
# be shared, and CPU time is much less sensitive to other load.
#
# Modes: idle (every broadcast announced and subscribed, media paused after
# its first video group: what recorders waiting on paused broadcasts cost),
# active (the demo's bitrate, ~0.3 Mb/s), active4m (video padded to 4 Mb/s;
# activeNm pads it to N Mb/s).
#
#   scripts/bench-fleet.sh                       # N = 1 10 100 1000, idle and active
#   NS="1 10" MODES="idle active4m" WINDOW=10 scripts/bench-fleet.sh
#   MOQ_EXPORT=/path/to/moq-export scripts/bench-fleet.sh   # measure another build
#   KEEP=1 scripts/bench-fleet.sh   # keep the last run's files, logs and summary
#   VERSIONS=moq-transport-17 scripts/bench-fleet.sh   # over an IETF draft instead of moq-lite
#   PROFILES=dir scripts/bench-fleet.sh   # save the recorder's goroutines, heap and CPU profile
#                                         # (and the publisher's CPU profile, pub-cpu-*)
#   OUTPUTS="file s3" scripts/bench-fleet.sh   # also record into an S3 bucket (-o s3://...):
#       a versitygw (scripts/versitygw.sh) on loopback is the store; "store cpu%" is its CPU.
#       The frames are counted from the summary and a few objects are decoded, as for files.
#   scripts/bench-fleet.sh -n 100 -b 4 -o "file s3"   # the same as NS=100 MODES=active4m OUTPUTS="file s3"
#   scripts/bench-fleet.sh -n 20 -b 1 -o "file s3"    # a smaller fleet when the machine cannot deliver 100 x 4
#
# Delivery: a loaded machine starves the publisher (it falls behind real time) and the recorder
# alike, and a cost per recording measured then says little. Each row reports "deliv%": the
# media the recorder wrote (the summary's media_seconds, summed over the files) over the real
# time the broadcasts ran (each from its start in the ramp to the end), and "pub" and "lost":
# the frames published and those the recorder did not write. A row with deliv% under
# MIN_DELIVERY (95) or any frame lost is marked INVALID, and the script then exits 1 after
# every row. With "file" and "s3" both in OUTPUTS, the last lines give each s3 row's CPU per
# recording over the file row's of the same mode and N (the 1.25x bound), valid only when both
# rows are.
set -euo pipefail

while getopts "n:b:o:h" opt; do
	case $opt in
	n) NS=$OPTARG ;;
	b) MODES=active${OPTARG}m ;;
	o) OUTPUTS=$OPTARG ;;
	*)
		sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
		exit 2
		;;
	esac
done

NS=${NS:-1 10 100 1000}
MODES=${MODES:-idle active}
WARMUP=${WARMUP:-5}
WINDOW=${WINDOW:-20}
FORMAT=${FORMAT:-mkv}
CHECK_FILES=${CHECK_FILES:-3}
RAMP=${RAMP:-2s} # the broadcasts start one after another over RAMP, as a fleet's do
VERSIONS=${VERSIONS:-} # the protocol versions the publisher accepts (empty: all, so moq-lite-05)
OUTPUTS=${OUTPUTS:-file} # file, s3 (an S3 bucket on a loopback versitygw)
MIN_DELIVERY=${MIN_DELIVERY:-95} # percent of real time; below it a row is INVALID
# ramp_s: RAMP in seconds (Go durations in s or ms).
case $RAMP in
*ms) ramp_s=$(awk -v v="${RAMP%ms}" 'BEGIN {print v / 1000}') ;;
*s) ramp_s=${RAMP%s} ;;
*) echo "bench-fleet: RAMP=$RAMP: give seconds (2s) or milliseconds (500ms)" >&2; exit 2 ;;
esac

cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
pub_pid=
rec_pid=
store_pid=
cleanup() {
	[ -n "$rec_pid" ] && kill -9 "$rec_pid" 2>/dev/null || true
	[ -n "$pub_pid" ] && kill -9 "$pub_pid" 2>/dev/null || true
	[ -n "$store_pid" ] && kill -9 "$store_pid" 2>/dev/null || true
	if [ -n "${KEEP:-}" ]; then
		echo "bench-fleet: kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
if [ -z "${MOQ_EXPORT:-}" ]; then
	go build -o "$tmp/moq-export" ./cmd/moq-export
	MOQ_EXPORT=$tmp/moq-export
fi
go build -o "$tmp/fleetpub" ./tools/fleetpub
tck=$(getconf CLK_TCK)
# --record-all refuses broadcasts beyond --max-broadcasts (default 32):
# lift it to N where the build has it.
limit_flag=
if "$MOQ_EXPORT" --help 2>&1 | grep -q -- --max-broadcasts; then
	limit_flag=--max-broadcasts
fi

# wait_for DESCRIPTION SECONDS COMMAND...: until COMMAND succeeds.
wait_for() {
	local what=$1 limit=$2
	shift 2
	local end=$((SECONDS + limit))
	until "$@"; do
		if [ $SECONDS -ge $end ]; then
			echo "bench-fleet: timed out after ${limit}s waiting for $what" >&2
			return 1
		fi
		sleep 0.2
	done
}
cpu_ticks() { if [ -n "$1" ]; then awk '{print $14 + $15}' "/proc/$1/stat"; else echo 0; fi; }
status_kb() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
files_opened() { [ "$(find "$tmp/rec" "$tmp/spool" -type f -not -name '*.json' | wc -l)" -ge "$1" ]; }
# local_path PATH: the file of a summary path (an s3:// object is a file of the store's root).
local_path() { case $1 in s3://*) echo "$tmp/s3/${1#s3://}" ;; *) echo "$1" ;; esac; }
if [[ " $OUTPUTS " == *" s3 "* ]]; then
	versitygw=$(scripts/versitygw.sh)
	store_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	mkdir -p "$tmp/s3/rec"
	ROOT_ACCESS_KEY=bench ROOT_SECRET_KEY=benchsecret "$versitygw" --port "127.0.0.1:$store_port" --quiet posix "$tmp/s3" 2>"$tmp/store.log" &
	store_pid=$!
	wait_for "the S3 store" 30 bash -c "exec 3<>/dev/tcp/127.0.0.1/$store_port" 2>/dev/null
	export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=benchsecret AWS_REGION=us-east-1 AWS_ENDPOINT_URL=http://127.0.0.1:$store_port \
		AWS_EC2_METADATA_DISABLED=true AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
fi
files_finished() { [ "$(grep -c 'output finished' "$tmp/rec.log" || true)" -ge "$1" ]; }
have_line() { grep -qs "$1" "$2"; }

printf '%-6s %-9s %5s  %9s %9s  %9s %8s  %6s %7s %7s  %8s %6s %9s %6s %7s  %8s %10s\n' \
	output mode N "cpu%core" "per-rec" "RSS MB" "per-rec" gorout "per-rec" threads "Mb/s" deliv% pub lost "close s" "pub cpu%" "store cpu%"
invalid=0
declare -A perrec valid
for output in $OUTPUTS; do
for mode in $MODES; do
	pubflags=()
	case $mode in
	idle) pubflags=(-pause) ;;
	active) ;;
	active*m) pubflags=(-video-bitrate "${mode//[!0-9]/}000000") ;;
	*) echo "bench-fleet: unknown mode $mode (idle, active, active4m, activeNm)" >&2; exit 2 ;;
	esac
	for n in $NS; do
		rm -rf "$tmp/rec" "$tmp/spool" "$tmp/pub.out" "$tmp/rec.log" "$tmp/summary.json" "$tmp/s3/rec"/*
		mkdir -p "$tmp/rec" "$tmp/spool"
		case $output in
		file) out="$tmp/rec/{broadcast}.$FORMAT" spool=() ;;
		s3) out="s3://rec/{broadcast}.$FORMAT" spool=(--spool "$tmp/spool") ;;
		*) echo "bench-fleet: unknown output $output (file, s3)" >&2; exit 2 ;;
		esac
		"$tmp/fleetpub" -n "$n" -ramp "$RAMP" -pprof 127.0.0.1:0 -versions "$VERSIONS" "${pubflags[@]}" >"$tmp/pub.out" 2>"$tmp/pub.err" &
		pub_pid=$!
		wait_for "the publisher" 60 have_line moql "$tmp/pub.out"
		read -r url pin <"$tmp/pub.out"
		MOQ_EXPORT_PPROF=127.0.0.1:0 "$MOQ_EXPORT" "$url" --tls-fingerprint "$pin" --record-all ${limit_flag:+$limit_flag "$n"} \
			-o "$out" "${spool[@]}" --progress never -v --summary "$tmp/summary.json" 2>"$tmp/rec.log" &
		rec_pid=$!
		wait_for "$n files to open" 300 files_opened "$n"
		kill -USR1 "$pub_pid"
		started=$(date +%s.%N)
		sleep "$WARMUP"
		c0=$(cpu_ticks "$rec_pid")
		p0=$(cpu_ticks "$pub_pid")
		s0=$(cpu_ticks "$store_pid")
		t0=$(date +%s.%N)
		sleep "$WINDOW"
		c1=$(cpu_ticks "$rec_pid")
		p1=$(cpu_ticks "$pub_pid")
		s1=$(cpu_ticks "$store_pid")
		t1=$(date +%s.%N)
		rss=$(status_kb "$rec_pid" VmRSS)
		threads=$(status_kb "$rec_pid" Threads)
		pprof=$(sed -n 's|.*serving Go profiles on \(http://[^ ]*\).*|\1|p' "$tmp/rec.log" | head -1)
		goroutines=?
		if [ -n "$pprof" ]; then
			goroutines=$(curl -s "${pprof}goroutine?debug=1" | sed -n '1s/.*total \([0-9]*\).*/\1/p')
			if [ -n "${PROFILES:-}" ]; then
				mkdir -p "$PROFILES"
				curl -s -o "$PROFILES/goroutines-$mode-$n.txt" "${pprof}goroutine?debug=1"
				curl -s -o "$PROFILES/heap-$mode-$n.pb.gz" "${pprof}heap?gc=1"
				curl -s -o "$PROFILES/memstats-$mode-$n.txt" "${pprof}heap?debug=1&gc=1"
				pubpprof=$(sed -n 's|.*serving Go profiles on \(http://[^ ]*\).*|\1|p' "$tmp/pub.err" | head -1)
				curl -s -o "$PROFILES/pub-cpu-$mode-$n.pb.gz" "${pubpprof}profile?seconds=$WINDOW" &
				pubcurl=$!
				curl -s -o "$PROFILES/cpu-$mode-$n.pb.gz" "${pprof}profile?seconds=$WINDOW"
				wait "$pubcurl"
			fi
		fi
		kill -TERM "$pub_pid"
		wait_for "the publisher to end its broadcasts" 120 have_line published "$tmp/pub.out"
		ended=$(date +%s.%N)
		published=$(awk '$1 == "published" {print $2}' "$tmp/pub.out")
		wait_for "$n files to finish" 300 files_finished "$n"
		finished=$(date +%s.%N)
		kill -INT "$rec_pid"
		wait "$rec_pid" || true
		rec_pid=
		kill -TERM "$pub_pid"
		wait "$pub_pid" || true
		pub_pid=
		written=$(jq '[.files[].frames] | add // 0' "$tmp/summary.json")
		if [ "$published" != "$written" ]; then
			# Which broadcasts lost frames, and how many (the first few).
			jq -r '.files | group_by(.broadcast)[] | "\(.[0].broadcast) \([.[].frames] | add)"' "$tmp/summary.json" | sort >"$tmp/written.txt"
			awk '$1 == "broadcast" {print $2, $3}' "$tmp/pub.out" | sort | join -a1 - "$tmp/written.txt" |
				awk '$2 != $3 {printf "bench-fleet: %s published %d, recorded %d\n", $1, $2, $3 + 0; if (++k == 5) exit}' >&2
		fi
		bytes=$(jq '[.files[].size] | add // 0' "$tmp/summary.json")
		media=$(jq '[.files[].media_seconds] | add // 0' "$tmp/summary.json")
		# A few files, decoded: their packets are the frames the summary says.
		for f in $(jq -r ".files[:$CHECK_FILES][] | \"\(.path)=\(.frames)\"" "$tmp/summary.json"); do
			path=$(local_path "${f%=*}")
			want=${f##*=}
			got=$(ffprobe -v error -count_packets -show_entries stream=nb_read_packets -of csv=p=0 "$path" | awk '{n += $1} END {print n}')
			if [ "$got" != "$want" ]; then
				echo "bench-fleet: $path holds $got packets, the summary says $want" >&2
				exit 1
			fi
		done
		row=$(awk -v output="$output" -v mode="$mode" -v n="$n" -v c0="$c0" -v c1="$c1" -v p0="$p0" -v p1="$p1" -v s0="$s0" -v s1="$s1" -v t0="$t0" -v t1="$t1" -v tck="$tck" \
			-v rss="$rss" -v g="$goroutines" -v th="$threads" -v pub="$published" -v wr="$written" -v media="$media" -v ramp="$ramp_s" -v mind="$MIN_DELIVERY" \
			-v bytes="$bytes" -v s="$started" -v e="$ended" -v f="$finished" 'BEGIN {
			cpu = (c1 - c0) / tck / (t1 - t0) * 100
			gp = (g == "?") ? "?" : sprintf("%.1f", g / n)
			pcpu = (p1 - p0) / tck / (t1 - t0) * 100
			scpu = (output == "s3") ? sprintf("%9.2f%%", (s1 - s0) / tck / (t1 - t0) * 100) : "-"
			# Broadcast i of n starts ramp*i/n after the first: the real time all ran.
			real = n * (e - s) - ramp * (n - 1) / 2
			deliv = real > 0 ? media / real * 100 : 0
			ok = (deliv >= mind && pub == wr) ? "" : "  INVALID"
			printf "%-6s %-9s %5d  %8.2f%% %8.4f%%  %9.1f %6.0fKB  %6s %7s %7d  %8.1f %5.1f%% %9d %6d %7.1f  %7.2f%% %10s%s\t%.6f\t%d\n",
				output, mode, n, cpu, cpu / n, rss / 1024, rss / n, g, gp, th, bytes * 8 / (e - s) / 1e6, deliv, pub, pub - wr, f - e, pcpu, scpu, ok, cpu / n, ok == ""
		}')
		IFS=$'\t' read -r line per ok <<<"$row"
		echo "$line"
		perrec[$output/$mode/$n]=$per
		valid[$output/$mode/$n]=$ok
		[ "$ok" = 1 ] || invalid=1
	done
done
done
if [[ " $OUTPUTS " == *" s3 "* && " $OUTPUTS " == *" file "* ]]; then
	for mode in $MODES; do
		for n in $NS; do
			f=${perrec[file/$mode/$n]:-} o=${perrec[s3/$mode/$n]:-}
			[ -n "$f" ] && [ -n "$o" ] || continue
			note=
			[ "${valid[file/$mode/$n]}" = 1 ] && [ "${valid[s3/$mode/$n]}" = 1 ] || note=" (INVALID: a row did not deliver)"
			awk -v m="$mode" -v n="$n" -v f="$f" -v o="$o" -v note="$note" 'BEGIN {
				printf "s3/file CPU per recording, %s N=%d: %.2fx (bound 1.25x)%s\n", m, n, (f > 0 ? o / f : 0), note
			}'
		done
	done
fi
if [ "$invalid" = 1 ]; then
	echo "bench-fleet: INVALID rows: the machine did not deliver ${MIN_DELIVERY}% of real time or frames were lost; run a smaller fleet (-n, -b) or on a quieter machine" >&2
	exit 1
fi
