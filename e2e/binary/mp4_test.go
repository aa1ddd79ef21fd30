package binary

import (
	"bytes"
	"context"
	be "encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// mp4Boxes lists the top-level box types of an MP4 file, stopping at a
// torn last box.
func mp4Boxes(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for len(b) >= 8 {
		size := uint64(be.BigEndian.Uint32(b))
		if size == 1 && len(b) >= 16 {
			size = be.BigEndian.Uint64(b[8:])
		}
		if size < 8 || size > uint64(len(b)) {
			break
		}
		out = append(out, string(b[4:8]))
		b = b[size:]
	}
	return out
}

// checkFinishedMP4 checks that path is a regular, fast-start MP4: ftyp and
// moov first, an mdat after them and no fragments.
func checkFinishedMP4(t *testing.T, path string) {
	t.Helper()
	boxes := mp4Boxes(t, path)
	s := strings.Join(boxes, ",")
	if len(boxes) < 3 || boxes[0] != "ftyp" || boxes[1] != "moov" || boxes[len(boxes)-1] != "mdat" || strings.Contains(s, "moof") {
		t.Errorf("%s: boxes %s, want ftyp,moov,...,mdat without fragments", filepath.Base(path), s)
	}
}

// TestRecordsTheDemoToAFinishedMP4: -o talk.mp4 --duration gives a regular
// MP4 with both tracks, the duration, and every frame.
func TestRecordsTheDemoToAFinishedMP4(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	for _, tc := range []struct {
		file   string
		extra  []string
		codecs []string
	}{
		{"talk.mp4", nil, []string{"h264", "aac"}},
		{"talk.m4v", []string{"--demo-codecs", "vp9,opus"}, []string{"vp9", "opus"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			r := cmdtest.Run(t, dir, append([]string{"-o", tc.file, "--duration", "2s"}, tc.extra...)...)
			if r.Code != 0 {
				t.Fatalf("exit %d: %s", r.Code, r.Stderr)
			}
			path := filepath.Join(dir, tc.file)
			checkFinishedMP4(t, path)
			p := cmdtest.Probe(t, path)
			if !strings.Contains(p.Format.FormatName, "mp4") || len(p.Streams) != len(tc.codecs) {
				t.Errorf("format %q streams %+v, want mp4 with %v", p.Format.FormatName, p.Streams, tc.codecs)
			}
			for _, c := range tc.codecs {
				cmdtest.ExpectFrames(t, p, c, 2)
			}
			if d := p.Duration(t); d < 1900*time.Millisecond || d > 2100*time.Millisecond {
				t.Errorf("duration %v, want 2s", d)
			}
			cmdtest.Decode(t, path)
		})
	}
}

// TestStdoutMP4PipesIntoFFmpeg: -f mp4 on stdout is fragmented MP4 that
// ffmpeg decodes from the pipe as it comes: every frame the recorder says
// it wrote, 2 s of media.
//
// How many frames that is depends on the machine: a stream waits for a
// lagging track only --delay (500 ms; files wait up to --max-delay), so a
// stall longer than that under load drops the lagging track's frames as
// late, or ends the recording (its 2 s reached on the other track) before
// they come. Seen at load 10-13 with a CPU hog on both cores, 3 runs in
// 40: 49 audio packets with 15 dropped late, 61 with 33 dropped late, and
// 47 video packets where video lagged at the end. The summary accounts
// for each; the exact 2 s of each track is held by the file tests, which
// wait longer.
func TestStdoutMP4PipesIntoFFmpeg(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	summary := filepath.Join(t.TempDir(), "summary.json")
	exp := proctest.CommandContext(ctx, cmdtest.Binary, "-f", "mp4", "--duration", "2s", "--summary", summary)
	ff := proctest.CommandContext(ctx, "ffmpeg", "-nostdin", "-v", "error", "-i", "-", "-map", "0", "-c", "copy", "-f", "framecrc", "-")
	pipe, err := exp.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ff.Stdin = pipe
	var expErr, ffErr, ffOut bytes.Buffer
	exp.Stderr, ff.Stderr, ff.Stdout = &expErr, &ffErr, &ffOut
	if err := exp.Start(); err != nil {
		t.Fatal(err)
	}
	if err := ff.Run(); err != nil {
		t.Errorf("ffmpeg: %v", err)
	}
	if err := exp.Wait(); err != nil {
		t.Fatalf("moq-export: %v: %s", err, expErr.String())
	}
	if ffErr.Len() > 0 {
		t.Errorf("ffmpeg complained:\n%s", ffErr.String())
	}
	// framecrc lines: stream, dts, pts, duration, size, crc; time bases
	// in "#tb N: 1/D" lines.
	packets := map[int]int{}
	tb := map[int]float64{}
	first, end := map[int]float64{}, map[int]float64{}
	for _, l := range strings.Split(ffOut.String(), "\n") {
		var st, num, den int
		if n, _ := fmt.Sscanf(l, "#tb %d: %d/%d", &st, &num, &den); n == 3 && den > 0 {
			tb[st] = float64(num) / float64(den)
			continue
		}
		var dts, pts, dur int64
		if n, _ := fmt.Sscanf(strings.ReplaceAll(l, ",", " "), "%d %d %d %d", &st, &dts, &pts, &dur); n != 4 || strings.HasPrefix(l, "#") {
			continue
		}
		at, to := float64(pts)*tb[st], float64(pts+dur)*tb[st]
		if packets[st] == 0 || at < first[st] {
			first[st] = at
		}
		end[st] = max(end[st], to)
		packets[st]++
	}
	sum := cmdtest.ReadSummary(t, summary)
	for st, track := range []string{"h264", "aac"} {
		if w := sum.Written(track); packets[st] != w || w == 0 {
			t.Errorf("ffmpeg read %d packets of %s from the pipe; the recorder wrote %d", packets[st], track, w)
		}
	}
	for _, pt := range sum.PerTrack {
		if pt.Received != pt.Written+pt.DroppedLate+pt.DroppedByMuxer+pt.Malformed+pt.AfterEnd {
			t.Errorf("%s: received %d, and written %d, dropped %d late, %d by the muxer and %d malformed, %d after the end", pt.Track,
				pt.Received, pt.Written, pt.DroppedLate, pt.DroppedByMuxer, pt.Malformed, pt.AfterEnd)
		}
	}
	if d := max(end[0], end[1]) - min(first[0], first[1]); d < 1.95 || d > 2.05 {
		t.Errorf("the pipe holds %.3f s of media (video %.3f-%.3f s, audio %.3f-%.3f s), want 2 s", d, first[0], end[0], first[1], end[1])
	}
	if packets[0] < 57 || packets[1] < 90 {
		t.Logf("short under load: %d video and %d audio packets of 2 s (60, 94); the summary: %+v", packets[0], packets[1], sum.PerTrack)
	}
}

// TestSegmentsOfMP4AreFinishedFiles: each --segment rotation finishes its
// file into a regular MP4 that starts at a keyframe.
func TestSegmentsOfMP4AreFinishedFiles(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	r := cmdtest.Run(t, dir, "-o", "rec/{broadcast}-{n}.mp4", "--segment", "1s", "--duration", "3.5s")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "rec", "*"))
	if len(files) < 3 {
		t.Fatalf("files %v, want at least 3 segments (and no leftover temporary files)", files)
	}
	total := 0
	for i := range files {
		path := filepath.Join(dir, "rec", fmt.Sprintf("demo-%d.mp4", i))
		checkFinishedMP4(t, path)
		p := cmdtest.Probe(t, path)
		total += p.Frames(t, "h264")
		if d := p.Duration(t); d < 900*time.Millisecond && i < len(files)-1 {
			t.Errorf("%s: duration %v, want at least the 1s segment", filepath.Base(path), d)
		}
		cmdtest.Decode(t, path)
	}
	if total < 100 || total > 106 {
		t.Errorf("%d video frames over all segments, want about 105 (3.5s)", total)
	}
}

// TestInterruptFinishesTheMP4: Ctrl-C stops the recording and the file is
// finished, with its duration.
func TestInterruptFinishesTheMP4(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	path, low, high := recordUntilSignal(t, "live.mp4", os.Interrupt)
	checkFinishedMP4(t, path)
	p := cmdtest.Probe(t, path)
	if d := p.Duration(t); d < low || d > high {
		t.Errorf("duration %v, want %v-%v (what was written at the signal, and after it until the exit)", d, low, high)
	}
	cmdtest.Decode(t, path)
}

// TestKilledMP4RecordingPlays: SIGKILL during a recording leaves the
// fragments written so far, which ffmpeg decodes.
func TestKilledMP4RecordingPlays(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	cmd := proctest.Command(cmdtest.Binary, "-o", "crash.mp4")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "crash.mp4")
	// Wait for the third fragment to reach the file (the demo cuts one at
	// each 1 s keyframe and the muxer flushes it whole).
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil && strings.Count(strings.Join(mp4Boxes(t, path), ","), "moof") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no three fragments in %s after 20 s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	boxes := mp4Boxes(t, path)
	if len(boxes) < 8 || boxes[0] != "ftyp" || boxes[1] != "moov" || !strings.Contains(strings.Join(boxes, ","), "moof,mdat") {
		t.Fatalf("killed recording's boxes %v, want ftyp,moov and fragments", boxes)
	}
	p := cmdtest.Probe(t, path)
	if n := p.Frames(t, "h264"); n < 60 {
		t.Errorf("killed recording decodes %d video frames, want the 3 fragments' 90", n)
	}
	out, err := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0", "-f", "null", "-").CombinedOutput()
	if err != nil {
		t.Errorf("ffmpeg on the killed recording: %v\n%s", err, out)
	}
}
