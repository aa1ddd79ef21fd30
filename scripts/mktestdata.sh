#!/usr/bin/env bash
# Regenerates internal/samples/testdata/*.frames: a few seconds of real
# encoded media per codec, made from ffmpeg's lavfi test sources, stored as
# frame dumps (see internal/samples) so tests and the built-in demo need no
# ffmpeg at run time.
# Needs ffmpeg/ffprobe (Debian 12: libx264, libx265, libaom, libvpx, libopus,
# libmp3lame). Run from the repository root: scripts/mktestdata.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

V="-f lavfi -i testsrc2=size=320x180:rate=30:duration=4"
A="-f lavfi -i sine=frequency=440:sample_rate=48000:duration=4,aformat=channel_layouts=stereo"
enc() { # name ext ffmpeg-args...
	local name=$1 ext=$2; shift 2
	ffmpeg -v error -y "$@" "$tmp/$name.$ext"
	ffprobe -v error -show_streams -show_packets -show_data -of json "$tmp/$name.$ext" >"$tmp/$name.json"
	go run ./tools/framedump <"$tmp/$name.json" >"internal/samples/testdata/$name.frames"
}

# H.264 High with B-frames (PTS != DTS), one keyframe a second.
enc h264 mp4 $V -c:v libx264 -preset veryfast -profile:v high -bf 2 -g 30 -keyint_min 30 -sc_threshold 0 -b:v 250k -pix_fmt yuv420p
# The same picture at 640x360, keyframes where h264's are: a second size
# of one broadcast (simulcast), for the HLS variants (demo.Simulcast).
enc h264-360p mp4 -f lavfi -i testsrc2=size=640x360:rate=30:duration=4 -c:v libx264 -preset veryfast -profile:v high -bf 2 -g 30 -keyint_min 30 -sc_threshold 0 -b:v 400k -pix_fmt yuv420p
enc h265 mp4 $V -c:v libx265 -preset veryfast -x265-params "bframes=2:keyint=30:min-keyint=30:scenecut=0:log-level=error" -b:v 200k -pix_fmt yuv420p -tag:v hvc1
enc av1 mp4 $V -t 2 -c:v libaom-av1 -cpu-used 8 -row-mt 1 -g 30 -b:v 150k -pix_fmt yuv420p
enc vp8 webm $V -t 3 -c:v libvpx -deadline realtime -cpu-used 8 -g 30 -b:v 200k
enc vp9 webm $V -t 3 -c:v libvpx-vp9 -deadline realtime -cpu-used 8 -g 30 -b:v 150k -pix_fmt yuv420p
enc aac m4a $A -c:a aac -b:a 64k
enc opus webm $A -c:a libopus -b:a 48k
enc mp3 mp3 $A -c:a libmp3lame -b:a 64k
enc flac mkv $A -t 2 -ac 1 -c:a flac
enc ac3 mkv $A -t 2 -c:a ac3 -b:a 96k
ls -l internal/samples/testdata
