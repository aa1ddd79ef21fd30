package service

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// segmentsOf returns the segments a media playlist lists, in order: a
// file name, or in the byte-range layout (a directory's default)
// "FILE@OFFSET+LENGTH".
func segmentsOf(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	rng := ""
	for _, l := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(l, "#EXT-X-BYTERANGE:"); ok {
			n, off, _ := strings.Cut(r, "@")
			rng = "@" + off + "+" + n
		}
		if strings.HasSuffix(l, ".m4s") || (strings.HasSuffix(l, ".mp4") && !strings.HasPrefix(l, "#")) {
			out = append(out, l+rng)
			rng = ""
		}
	}
	return out
}

// segmentBytes reads segment seg (segmentsOf) of the package in dir.
func segmentBytes(dir, seg string) ([]byte, error) {
	name, rng, ok := strings.Cut(seg, "@")
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil || !ok {
		return b, err
	}
	o, n, _ := strings.Cut(rng, "+")
	off, _ := strconv.Atoi(o)
	size, _ := strconv.Atoi(n)
	if off+size > len(b) {
		return nil, fmt.Errorf("%s holds %d bytes, not %s", name, len(b), seg)
	}
	return b[off : off+size], nil
}

// overHTTP serves dir over HTTP on loopback for the test and returns the
// URL of its file name: ffmpeg 5.1's DASH reader reads the byte ranges
// of an MPD only from an HTTP server.
func overHTTP(t *testing.T, dir, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL + "/" + name
}

// decodeAll runs every stream of path through ffmpeg's decoders, which
// must say nothing.
func decodeAll(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0", "-f", "null", "-")
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("ffmpeg decoding %s: %v\n%s", filepath.Base(path), err, errOut.String())
	}
}

// TestKilledHLSRecordingPlaysAndARestartContinuesIt kills (SIGKILL) a
// recording of the simulcast demo into an HLS package once three
// segments are out, checks that what is on disk plays to its last
// complete segment, then records again into the same package: it goes on
// after a discontinuity, the earlier segments untouched, and ends as a
// VOD that plays whole.
func TestKilledHLSRecordingPlaysAndARestartContinuesIt(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pkg")
	args := []string{"--demo-simulcast", "-o", "pkg/index.m3u8", "--hls-segment-duration", "1s"}
	cmd := proctest.Command(cmdtest.Binary, args...)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(pkg, "index.m3u8")); err == nil && len(segmentsOf(t, filepath.Join(pkg, "a1.m3u8"))) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("no three segments in the package after 20 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	before := map[string][]byte{}
	for _, id := range []string{"v0", "v1", "a0", "a1"} {
		pl := filepath.Join(pkg, id+".m3u8")
		b, err := os.ReadFile(pl)
		if err != nil {
			t.Fatalf("the killed recording left no %s.m3u8: %v", id, err)
		}
		if !strings.Contains(string(b), "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Contains(string(b), "ENDLIST") {
			t.Fatalf("%s.m3u8 of a killed recording:\n%s", id, b)
		}
		for _, s := range segmentsOf(t, pl) {
			data, err := segmentBytes(pkg, s)
			if err != nil {
				t.Fatalf("%s names %s, which the killed recording did not leave: %v", id, s, err)
			}
			before[s] = data
		}
		// A player reading the EVENT playlist to its end plays it
		// (ffmpeg would wait for it to grow: it gets an ended copy).
		closed := filepath.Join(pkg, "killed-"+id+".m3u8")
		if err := os.WriteFile(closed, append(b, "#EXT-X-ENDLIST\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		decodeAll(t, closed)
	}

	r := cmdtest.Run(t, dir, append(args, "--duration", "3s")...)
	if r.Code != 0 {
		t.Fatalf("the restart exited %d:\n%s", r.Code, r.Stderr)
	}
	for _, id := range []string{"v0", "v1", "a0", "a1"} {
		pl := filepath.Join(pkg, id+".m3u8")
		b, _ := os.ReadFile(pl)
		text := string(b)
		if strings.Count(text, "#EXT-X-DISCONTINUITY\n") != 1 || !strings.HasSuffix(text, "#EXT-X-ENDLIST\n") {
			t.Fatalf("%s after the restart, want one discontinuity and the end:\n%s", id, text)
		}
		segs := segmentsOf(t, pl)
		var kept []string
		for _, s := range segs {
			if old, ok := before[s]; ok {
				kept = append(kept, s)
				if now, _ := segmentBytes(pkg, s); !bytes.Equal(now, old) {
					t.Errorf("the restart rewrote %s", s)
				}
			}
		}
		if len(kept) == 0 || !slices.Equal(kept, segs[:len(kept)]) || len(segs) <= len(kept) {
			t.Errorf("%s: segments %v after the restart, the killed recording's %d first", id, segs, len(kept))
		}
		// The media file holds what its playlist names and no more: the
		// restart cut off whatever the killed recording wrote after it.
		last := segs[len(segs)-1]
		name, rng, ranged := strings.Cut(last, "@")
		if !ranged {
			t.Fatalf("%s: segment %s is not a byte range of the rendition's media file (a directory's layout)", id, last)
		}
		o, n, _ := strings.Cut(rng, "+")
		off, _ := strconv.ParseInt(o, 10, 64)
		size, _ := strconv.ParseInt(n, 10, 64)
		if fi, err := os.Stat(filepath.Join(pkg, name)); err != nil || fi.Size() != off+size {
			t.Errorf("%s after the restart: %v, its playlist names %d bytes", name, err, off+size)
		}
	}
	decodeAll(t, filepath.Join(pkg, "index.m3u8"))
	decodeAll(t, overHTTP(t, pkg, "index.mpd"))
}

// TestHLSToStdoutIsRefusedBeforeRecording: a package is many files.
func TestHLSToStdoutIsRefusedBeforeRecording(t *testing.T) {
	t.Parallel()
	r := cmdtest.Run(t, t.TempDir(), "-f", "hls")
	if r.Code != 2 || !strings.Contains(r.Stderr, "stdout cannot hold") {
		t.Fatalf("-f hls to stdout: exit %d\n%s", r.Code, r.Stderr)
	}
}

// TestAPublisherRestartIsADiscontinuityInThePackage kills the publisher
// after 3 s of an HLS recording and starts it again on a fresh clock: every
// media playlist has one EXT-X-DISCONTINUITY, no segment spans the outage,
// the MPD has a second Period, and ffmpeg plays the package.
func TestAPublisherRestartIsADiscontinuityInThePackage(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	// A file per segment (--hls-segment-files), the layout an object
	// store gets: the killed-recording test above covers the byte ranges.
	cmdtest.RecordAcrossAFreshClockRestart(t, dir, "-o", "pkg/index.m3u8", "--hls-segment-duration", "1s", "--hls-segment-files")
	pkg := filepath.Join(dir, "pkg")
	for _, id := range []string{"v0", "a0"} {
		b, err := os.ReadFile(filepath.Join(pkg, id+".m3u8"))
		if err != nil {
			t.Fatal(err)
		}
		if segs := segmentsOf(t, filepath.Join(pkg, id+".m3u8")); len(segs) < 2 || strings.Contains(segs[0], "@") || !strings.HasSuffix(segs[0], ".m4s") {
			t.Errorf("%s with --hls-segment-files: segments %v, want files", id, segs)
		}
		text := string(b)
		if strings.Count(text, "#EXT-X-DISCONTINUITY\n") != 1 || !strings.HasSuffix(text, "#EXT-X-ENDLIST\n") {
			t.Fatalf("%s after a publisher restart:\n%s", id, text)
		}
		for _, l := range strings.Split(text, "\n") {
			if d, ok := strings.CutPrefix(l, "#EXTINF:"); ok {
				if sec, _ := strconv.ParseFloat(strings.TrimSuffix(d, ","), 64); sec > 2.5 {
					t.Errorf("%s: a segment of %.2f s spans the outage:\n%s", id, sec, text)
				}
			}
		}
	}
	mpd, err := os.ReadFile(filepath.Join(pkg, "index.mpd"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mpd), "<Period "); n != 2 {
		t.Errorf("the MPD has %d Periods after a publisher restart, want 2", n)
	}
	decodeAll(t, filepath.Join(pkg, "index.m3u8"))
}
