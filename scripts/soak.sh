#!/usr/bin/env bash
# soak.sh: the chaos soak of issue 26 for as long as you like.
#
# Runs TestChaosSoak (e2e/binary/soak/soak_test.go): three publishers (one
# speaking moq-lite, one IETF moq-transport draft 22, one draft 16 that
# refuses every FETCH as the reference publisher does) of three broadcasts
# each (legacy, loc and cmaf packaging), each behind a loopback UDP proxy,
# recorded by five --record-all processes (MKV and TS over moq-lite, MP4
# and FLV over moq-transport, MKV over the publisher without FETCH), while
# faults come one at a time at random:
# blackholes of 1-60 s, publisher SIGKILL + restart, recorder SIGKILL +
# restart, a full disk (a file size limit). At the end every file is
# decoded with ffmpeg and each fault's loss, read from the files' packet
# times, is checked against its bound. Before each fault the soak waits (up
# to 90 s, the "waited" column) until the recorders it touches trail live
# by under a second (their --http API's behind_seconds); a kill's bound is
# checked against its own part, its loss less how far the recording
# trailed live at the kill (the "behind at the kill" column). It prints the table of faults and
# losses, writes it to TABLE, and exits non-zero on any breach.
#
#   scripts/soak.sh                  # one hour
#   DURATION=5m scripts/soak.sh
#   DURATION=30m TABLE=/tmp/soak.md scripts/soak.sh
#   LOGS=/tmp/soak-logs scripts/soak.sh   # keep each recorder run's log
#   KEEP=/tmp/soak-files scripts/soak.sh   # keep the recordings too
#
# Everything stays on loopback; the run stops by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-1h}
TABLE=${TABLE:-$(mktemp -t soak-table.XXXXXX.md)}
LOG=${TABLE%.md}.log
LOGS=${LOGS:-${TABLE%.md}.recorders}
mkdir -p "$LOGS"
echo "soak: $DURATION, table in $TABLE, log in $LOG, recorder logs in $LOGS" >&2
set +eo pipefail
MOQ_SOAK_DURATION=$DURATION MOQ_SOAK_TABLE=$TABLE MOQ_SOAK_LOGS=$LOGS MOQ_SOAK_KEEP=${KEEP:-} \
	go test ./e2e/binary/soak -run '^TestChaosSoak$' -count=1 -v -timeout 100h 2>&1 |
	tee "$LOG" | grep --line-buffered -E 'soak_test.go:[0-9]+: +[0-9.]+s |^--- |^(ok|FAIL)'
status=${PIPESTATUS[0]}
cat "$TABLE" 2>/dev/null
exit "$status"
