package binary

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
)

// lateJoin is where --demo-late codecs join the demo broadcast (media time).
const lateJoin = 2.0

// TestLateRenditionThroughTheCLI records the demo while a catalog update
// adds a rendition after 2 s of media (--demo-late), once per output.
// Files that can add a track (MKV and WebM, with room in their header; TS,
// whose PMT changes) carry it from then on: mkvmerge lists it, ffprobe
// reads its packets from 2 s (--keep-timestamps keeps the broadcast's
// times) to the end without a hole, and as many as the recording says it
// wrote. Outputs that cannot (MKV on stdout, FLV and MP4
// after their header, FLV's second video) warn and leave it out.
func TestLateRenditionThroughTheCLI(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe", "mkvmerge")
	for _, tc := range []struct {
		name        string
		out         string // -o; "-" is stdout
		args        []string
		early, late []string // codecs (ffprobe names) before and after the update
		warn        string   // what the log says when the late one is left out
	}{
		{name: "mkv", out: "late.mkv", early: []string{"h264"}, late: []string{"aac"}},
		{name: "webm", out: "late.webm", args: []string{"--demo-codecs", "vp9", "--demo-late", "opus"}, early: []string{"vp9"}, late: []string{"opus"}},
		{name: "ts", out: "late.ts", early: []string{"h264"}, late: []string{"aac"}},
		{name: "ts on stdout", out: "-", args: []string{"-f", "ts"}, early: []string{"h264"}, late: []string{"aac"}},
		{name: "mkv on stdout", out: "-", args: []string{"-f", "mkv"}, early: []string{"h264"}, warn: "a live stream's Tracks cannot grow"},
		{name: "flv", out: "late.flv", early: []string{"h264"}, warn: "track added after the header was written"},
		{name: "mp4", out: "late.mp4", early: []string{"h264"}, warn: "track added after the header was written"},
		{name: "flv second video", out: "late2.flv", args: []string{"--demo-codecs", "h264,aac", "--demo-late", "h265"},
			early: []string{"h264", "aac"}, warn: "flv carries at most 1 video track(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			args := []string{"-o", tc.out, "--duration", "4s", "--keep-timestamps", "--summary", "sum.json", "-v"}
			if !slices.Contains(tc.args, "--demo-codecs") {
				args = append(args, "--demo-codecs", "h264", "--demo-late", "aac")
			}
			r := cmdtest.Run(t, dir, append(args, tc.args...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d:\n%s", r.Code, r.Stderr)
			}
			path := filepath.Join(dir, tc.out)
			if tc.out == "-" {
				path = filepath.Join(dir, "stdout")
				if err := os.WriteFile(path, []byte(r.Stdout), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmdtest.Decode(t, path)
			sum := cmdtest.ReadSummary(t, filepath.Join(dir, "sum.json"))
			got := cmdtest.PacketsByCodec(t, path)
			var codecs []string
			for c := range got {
				codecs = append(codecs, c)
			}
			want := append(append([]string(nil), tc.early...), tc.late...)
			slices.Sort(codecs)
			slices.Sort(want)
			if !slices.Equal(codecs, want) {
				t.Fatalf("streams %v, want %v\n%s", codecs, want, r.Stderr)
			}
			if tc.warn != "" && (!strings.Contains(r.Stderr, "rendition not exported") || !strings.Contains(r.Stderr, tc.warn)) {
				t.Errorf("no warning saying %q:\n%s", tc.warn, r.Stderr)
			}
			video := got[tc.early[0]]
			for _, c := range tc.late {
				sp := got[c]
				track := map[string]string{"aac": "aac", "opus": "opus"}[c]
				t.Logf("%s: %d packets from %.3fs to %.3fs; %s %d packets to %.3fs", c, len(sp.Pts), sp.Pts[0], sp.Pts[len(sp.Pts)-1],
					video.Codec, len(video.Pts), video.Pts[len(video.Pts)-1])
				// The rendition is taken from where the output was when the
				// recorder read the update: at once, its audio fetched back
				// to its first frame; under load the output may have gone
				// on a little meanwhile (a live output does not wait), at
				// most the jitter delay (--delay, 500 ms).
				if sp.Pts[0] < lateJoin-cmdtest.FrameDuration[c] || sp.Pts[0] > lateJoin+0.5 {
					t.Errorf("%s starts at %.3fs, want its first frame at %.1fs (or within the 0.5 s delay)", c, sp.Pts[0], lateJoin)
				}
				cmdtest.CheckContinuous(t, tc.name, sp)
				if end, vend := sp.Pts[len(sp.Pts)-1], video.Pts[len(video.Pts)-1]; end < vend-0.1 {
					t.Errorf("%s ends at %.3fs, the video at %.3fs", c, end, vend)
				}
				if n := sum.Written(track); n != len(sp.Pts) {
					t.Errorf("the recording says it wrote %d %s frames, the file holds %d", n, c, len(sp.Pts))
				}
			}
			cmdtest.CheckContinuous(t, tc.name, video)
			if strings.HasSuffix(tc.out, ".mkv") || strings.HasSuffix(tc.out, ".webm") {
				out, err := exec.Command("mkvmerge", "-J", path).Output()
				if err != nil {
					t.Fatalf("mkvmerge -J: %v", err)
				}
				var info struct {
					Tracks []struct {
						Type  string `json:"type"`
						Codec string `json:"codec"`
					} `json:"tracks"`
				}
				if err := json.Unmarshal(out, &info); err != nil {
					t.Fatal(err)
				}
				if len(info.Tracks) != len(want) {
					t.Errorf("mkvmerge lists %+v, want %d tracks", info.Tracks, len(want))
				}
			}
		})
	}
}

// TestLateRenditionStartsTheNextNumberedFile: FLV and MP4 cannot add a
// track after their header, so with {n} in -o the rendition that a catalog
// update adds starts the next file at the next video keyframe. ffprobe
// reads the first file with the video only and the second with both,
// starting at a keyframe; the video runs on across the split without a
// missing or repeated frame, and every frame the recording says it wrote
// is in one of the two files.
func TestLateRenditionStartsTheNextNumberedFile(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	for _, ext := range []string{"flv", "mp4"} {
		t.Run(ext, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			r := cmdtest.Run(t, dir, "-o", "late-{n}."+ext, "--duration", "4s", "--keep-timestamps", "--summary", "sum.json",
				"--demo-codecs", "h264", "--demo-late", "aac")
			if r.Code != 0 {
				t.Fatalf("exit %d:\n%s", r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "a late track starts the next file at the next keyframe") {
				t.Errorf("the log does not say why the file was split:\n%s", r.Stderr)
			}
			sum := cmdtest.ReadSummary(t, filepath.Join(dir, "sum.json"))
			if len(sum.Files) != 2 {
				t.Fatalf("files %+v, want 2\n%s", sum.Files, r.Stderr)
			}
			var files []map[string]*cmdtest.StreamPackets
			for _, f := range sum.Files {
				path := filepath.Join(dir, f.Path)
				cmdtest.Decode(t, path)
				files = append(files, cmdtest.PacketsByCodec(t, path))
			}
			if len(files[0]) != 1 || files[0]["h264"] == nil || len(files[1]) != 2 || files[1]["aac"] == nil {
				t.Fatalf("streams: first file %v, second %v; want h264, then h264+aac", cmdtest.Keys(files[0]), cmdtest.Keys(files[1]))
			}
			v0, v1, a1 := files[0]["h264"], files[1]["h264"], files[1]["aac"]
			if !v1.Key[0] {
				t.Errorf("the second file does not start with a keyframe")
			}
			t.Logf("first file: %d video frames %.3f-%.3fs; second: %d video %.3f-%.3fs, %d audio from %.3fs",
				len(v0.Pts), v0.Pts[0], v0.Pts[len(v0.Pts)-1], len(v1.Pts), v1.Pts[0], v1.Pts[len(v1.Pts)-1], len(a1.Pts), a1.Pts[0])
			if n := sum.Written("h264"); len(v0.Pts)+len(v1.Pts) != n {
				t.Errorf("%d+%d video frames in the files, the recording wrote %d", len(v0.Pts), len(v1.Pts), n)
			}
			if n := sum.Written("aac"); len(a1.Pts) != n {
				t.Errorf("%d audio frames in the second file, the recording wrote %d", len(a1.Pts), n)
			}
			cmdtest.CheckContinuous(t, "first file", v0)
			cmdtest.CheckContinuous(t, "second file", v1)
			cmdtest.CheckContinuous(t, "second file", a1)
			// The audio begins with the second file (within a frame).
			if math.Abs(a1.Pts[0]-v1.Pts[0]) > cmdtest.FrameDuration["aac"] {
				t.Errorf("audio starts at %.3fs, the second file at %.3fs", a1.Pts[0], v1.Pts[0])
			}
			if ext == "flv" {
				// FLV keeps the broadcast's times (a finished MP4 starts
				// at 0): the second file's video follows the first's by
				// one frame, and starts at the first keyframe after
				// what the recording had written when it took the
				// rendition (the warning's written_to): the keyframe
				// where the rendition joined when the catalog update
				// came before it, as unloaded (written_to 1.933 s), the
				// next one when a loaded machine read the update after
				// that keyframe was written. Never before it joined.
				written := writtenTo(t, r.Stderr)
				t.Logf("the recording took the rendition with %.3fs written", written)
				if v1.Pts[0] < lateJoin-cmdtest.FrameDuration["h264"] {
					t.Errorf("the second file starts at %.3fs, before the rendition joined at %.1fs", v1.Pts[0], lateJoin)
				}
				if v1.Pts[0] <= written {
					t.Errorf("the second file starts at %.3fs, not after the %.3fs written when the recording took the rendition", v1.Pts[0], written)
				}
				for i, key := range v0.Key {
					if key && v0.Pts[i] > written+0.001 {
						t.Errorf("the first file holds a keyframe at %.3fs, after the %.3fs written when the recording took the rendition: the split came late", v0.Pts[i], written)
					}
				}
				both := &cmdtest.StreamPackets{Codec: "h264", Pts: append(append([]float64(nil), v0.Pts...), v1.Pts...)}
				cmdtest.CheckContinuous(t, "across the split", both)
				if d := v1.Pts[0] - v0.Pts[len(v0.Pts)-1]; d < cmdtest.FrameDuration["h264"]/2 {
					t.Errorf("the second file starts %.3fs after the first ends: a frame is in both", d)
				}
			}
		})
	}
}

// writtenTo returns, in seconds, how far the recording had written when a
// late track came: the written_to of its warning ("a late track starts
// the next file").
func writtenTo(t *testing.T, stderr string) float64 {
	t.Helper()
	m := regexp.MustCompile(`a late track starts the next file[^\n]* written_to=(\S+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no written_to in the late track's warning:\n%s", stderr)
	}
	d, err := time.ParseDuration(m[1])
	if err != nil {
		t.Fatalf("written_to %q: %v", m[1], err)
	}
	return d.Seconds()
}
