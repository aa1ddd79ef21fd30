package main

import (
	"path/filepath"
	"testing"
)

// TestDemoInCMAFAndLOCRecordsTheFramesOfTheLegacyDemo: the demo published
// in the cmaf container (as `moq import fmp4` publishes) and in loc records
// into every format with the frames, frame for frame, of the legacy demo,
// and ffmpeg decodes each file without a message.
func TestDemoInCMAFAndLOCRecordsTheFramesOfTheLegacyDemo(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, ext := range []string{"mkv", "ts", "flv"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			frames := map[string][2]int{}
			for _, kind := range []string{"legacy", "cmaf", "loc"} {
				file := kind + "." + ext
				r := run(t, dir, "--demo-container", kind, "--duration", "4s", "-o", file)
				if r.code != 0 {
					t.Fatalf("%s: exit %d: %s", kind, r.code, r.stderr)
				}
				path := filepath.Join(dir, file)
				decode(t, path)
				p := probe(t, path)
				frames[kind] = [2]int{p.frames(t, "h264"), p.frames(t, "aac")}
			}
			if frames["cmaf"] != frames["legacy"] || frames["loc"] != frames["legacy"] {
				t.Fatalf("h264, aac frames: %v", frames)
			}
			expectFrames(t, probe(t, filepath.Join(dir, "cmaf."+ext)), "h264", 4)
		})
	}
}
