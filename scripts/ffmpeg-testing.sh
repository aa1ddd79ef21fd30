#!/usr/bin/env bash
# ffmpeg-testing.sh makes a newer ffmpeg/ffprobe (from Debian's testing suite)
# runnable on this machine WITHOUT installing anything into the system.
#
# Debian 12's ffmpeg 5.1 cannot read Enhanced RTMP FLV (hvc1, av01, vp09,
# Opus), so the mux/flv tests validate those files with this one.
#
# How: apt-get with a private sources list (testing), a private state and
# cache dir and an empty dpkg status downloads ffmpeg and every .deb it
# depends on (including testing's libc and dynamic loader); dpkg -x unpacks
# them into a private root; two wrappers run the binaries through the
# unpacked loader with --library-path, so the system's libraries and dpkg
# database are never touched.
#
# Usage: scripts/ffmpeg-testing.sh          # prints the wrapper directory
#        MOQ_EXPORT_FFMPEG_NEW=$(scripts/ffmpeg-testing.sh) go test ./mux/flv/
#
# The directory (default /var/cache/moq-export-ffmpeg, override with
# MOQ_EXPORT_FFMPEG_CACHE) holds apt's state, the .debs, the unpacked root
# and bin/ffmpeg, bin/ffprobe. A second run with bin/ present and working
# only prints the path. Tests look for MOQ_EXPORT_FFMPEG_NEW, then for
# /var/cache/moq-export-ffmpeg/bin.
set -euo pipefail

CACHE=${MOQ_EXPORT_FFMPEG_CACHE:-/var/cache/moq-export-ffmpeg}
SUITE=${MOQ_EXPORT_FFMPEG_SUITE:-testing}
MIRROR=${MOQ_EXPORT_FFMPEG_MIRROR:-http://deb.debian.org/debian}
ARCH=$(dpkg --print-architecture)
BIN=$CACHE/bin
ROOT=$CACHE/root

log() { echo "ffmpeg-testing: $*" >&2; }

# Fast path: already done and working.
if [[ -x $BIN/ffmpeg && -x $BIN/ffprobe ]] && "$BIN/ffmpeg" -hide_banner -version >/dev/null 2>&1; then
	echo "$BIN"
	exit 0
fi

command -v apt-get >/dev/null || { log "apt-get not found (Debian-based systems only)"; exit 1; }
command -v dpkg >/dev/null || { log "dpkg not found"; exit 1; }

mkdir -p "$CACHE"/{state/lists/partial,cache/archives/partial,etc/apt.conf.d,etc/preferences.d,etc/sources.list.d}
: >"$CACHE/state/status" # empty dpkg status: resolve every dependency from testing
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [arch=$ARCH signed-by=$KEYRING] $MIRROR $SUITE main" >"$CACHE/etc/sources.list"

APT=(apt-get -q
	-o "APT::Architecture=$ARCH"
	-o "APT::Architectures::=$ARCH"
	-o "Dir::Etc=$CACHE/etc"
	-o "Dir::Etc::SourceList=$CACHE/etc/sources.list"
	-o "Dir::Etc::SourceParts=$CACHE/etc/sources.list.d"
	-o "Dir::Etc::Parts=$CACHE/etc/apt.conf.d"
	-o "Dir::Etc::PreferencesParts=$CACHE/etc/preferences.d"
	-o "Dir::State=$CACHE/state"
	-o "Dir::State::status=$CACHE/state/status"
	-o "Dir::Cache=$CACHE/cache"
	-o "Debug::NoLocking=1"
	-o "APT::Install-Recommends=false"
	-o "APT::Get::AllowUnauthenticated=false")

start=$SECONDS
log "updating the private $SUITE package lists in $CACHE/state"
"${APT[@]}" update >"$CACHE/update.log" 2>&1 || { cat "$CACHE/update.log" >&2; exit 1; }

log "downloading ffmpeg and its dependencies (about 100 MB)"
"${APT[@]}" -y --download-only install ffmpeg >"$CACHE/download.log" 2>&1 ||
	{ cat "$CACHE/download.log" >&2; exit 1; }

log "unpacking into $ROOT"
rm -rf "$ROOT.tmp"
mkdir -p "$ROOT.tmp"
for deb in "$CACHE"/cache/archives/*.deb; do
	dpkg -x "$deb" "$ROOT.tmp"
done
rm -rf "$ROOT"
mv "$ROOT.tmp" "$ROOT"
"${APT[@]}" clean # the unpacked root is all that is needed

LOADER=
for l in "$ROOT"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$ROOT"/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
	"$ROOT"/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 "$ROOT"/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1; do
	if [[ -e $l ]]; then LOADER=$l; break; fi
done
[[ -n $LOADER ]] || { log "no dynamic loader found in the unpacked libc6"; exit 1; }

# Every directory that holds shared objects goes on the library path
# (some live in subdirectories such as blas/ or lapack/).
LIBPATH=$(find "$ROOT" \( -name '*.so' -o -name '*.so.*' \) \( -type f -o -type l \) -printf '%h\n' | sort -u | paste -sd:)

mkdir -p "$BIN.tmp"
for tool in ffmpeg ffprobe; do
	cat >"$BIN.tmp/$tool" <<EOF
#!/bin/sh
# Runs $SUITE's $tool from $ROOT through its own dynamic loader.
exec "$LOADER" --library-path "$LIBPATH" "$ROOT/usr/bin/$tool" "\$@"
EOF
	chmod +x "$BIN.tmp/$tool"
done
rm -rf "$BIN"
mv "$BIN.tmp" "$BIN"

"$BIN/ffmpeg" -hide_banner -version | head -1 >&2 || { log "the unpacked ffmpeg does not run"; exit 1; }
log "done in $((SECONDS - start)) s ($(du -sh "$CACHE" | cut -f1) in $CACHE)"
echo "$BIN"
