#!/usr/bin/env bash
# Installs what the test suite needs on a Debian machine (run as root, or
# with sudo available): ffmpeg/ffprobe and mkvtoolnix for validating output,
# chromium for the browser tests,
# the Go modules, a newer ffmpeg for Enhanced FLV and the reference
# implementation for the interop tests. Safe to run again: it skips what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
need=()
command -v ffprobe >/dev/null || need+=(ffmpeg)
command -v mkvmerge >/dev/null || need+=(mkvtoolnix)
# Debian's Chromium for the browser playback and browser publisher tests.
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
	echo "installing ${need[*]}" >&2
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
go mod download
# A newer ffmpeg, unpacked privately, for the Enhanced FLV codecs that
# Debian 12's ffmpeg 5.1 cannot read (mux/flv tests find it in its cache).
scripts/ffmpeg-testing.sh >/dev/null
# The S3-compatible server (versitygw, built from the Go module proxy into a
# cache) for the object-store tests of package objstore.
scripts/versitygw.sh >/dev/null
# The GCS and Azure emulators (fake-gcs-server from the Go module proxy,
# Azurite from npm, each into a cache) for the gs:// and az:// tests.
scripts/fake-gcs-server.sh >/dev/null
scripts/azurite.sh >/dev/null
# The reference implementation (@moq/net, @moq/hang under Deno, from npm) for
# the interop tests of package interop.
scripts/interop-setup.sh >/dev/null
