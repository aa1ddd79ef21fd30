package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/mux/ts"
)

// fullFileChildEnv names the file the child of
// TestALateFlushOnAFullDiskKeepsTheWholeWritesThatFit writes.
const fullFileChildEnv = "MOQ_EXPORT_RECORD_FULL_FILE"

// TestALateFlushOnAFullDiskKeepsTheWholeWritesThatFit: a file output's
// buffer can hold seconds of a muxer's Writes when it goes out (its flush
// timer starved on a loaded machine, a recorder catching up after a gap);
// when the disk fills part way through that write (a file size limit:
// what a full disk looks like to a writer), the file keeps the Writes
// that fit, whole, and decodes. It kept none of them (cut back to where
// the buffer began), so a file whose first flush met the full disk was
// left empty: ffmpeg's "Invalid data found when processing input" in the
// chaos soak beside two copies of the suite (stress26c, round r2).
func TestALateFlushOnAFullDiskKeepsTheWholeWritesThatFit(t *testing.T) {
	if env := os.Getenv(fullFileChildEnv); env != "" {
		var path string
		var limit int64
		var loops int
		if _, err := fmt.Sscanf(env, "%d %d %s", &limit, &loops, &path); err != nil {
			t.Fatalf("%s=%q: %v", fullFileChildEnv, env, err)
		}
		writeTSOnAFullDisk(t, path, limit, loops)
		return
	}
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	for _, c := range []struct {
		name  string
		limit int64 // bytes
		loops int   // of the sample media
	}{
		// 200 blocks of 512 bytes, as the chaos soak's full disk: a few
		// seconds of the sample, in the first buffer.
		{"in the first buffer", 200 * 512, 4},
		// Past the first buffer, which went out behind (on a goroutine of
		// its own) while the second filled.
		{"in a buffer written behind", outputBufferSize + 300<<10, 12},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "full.ts")
			cmd := proctest.Command(os.Args[0], "-test.run=^TestALateFlushOnAFullDiskKeepsTheWholeWritesThatFit$", "-test.v")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d %d %s", fullFileChildEnv, c.limit, c.loops, path))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			if !strings.Contains(string(out), "--- PASS: TestALateFlushOnAFullDiskKeepsTheWholeWritesThatFit") {
				t.Fatalf("the child did not run the check:\n%s", out)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the file holds %d bytes under a limit of %d", st.Size(), c.limit)
			mediatest.DecodeClean(t, path)
			if p := mediatest.Probe(t, path); len(p.Streams) != 2 {
				t.Fatalf("the file holds %d streams, want the video and the audio", len(p.Streams))
			}
		})
	}
}

// endsWriter records where each Write to w ended.
type endsWriter struct {
	w    io.Writer
	ends []int64
	n    int64
}

func (e *endsWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err == nil {
		e.n += int64(len(p))
		e.ends = append(e.ends, e.n)
	}
	return n, err
}

// writeTSOnAFullDisk is the child's part: loops of the sample media as TS
// through a file output whose buffer goes out when full or at Close only
// (the flush timer kept out of the way, as a starved one is), past a file
// size limit of limit bytes.
func writeTSOnAFullDisk(t *testing.T, path string, limit int64, loops int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	o := &FileOutput{flushingWriter: newFlushingWriter(&appendOrUndo{f: f}, outputBufferSize, time.Hour), f: f, name: path}
	o.behind = true
	ew := &endsWriter{w: o}
	w := ts.NewWriter(ew, ts.Options{})
	v, a := mediatest.SampleInput("h264", 1), mediatest.SampleInput("aac", 2)
	d := max(v.Frames[len(v.Frames)-1].Timestamp, a.Frames[len(a.Frames)-1].Timestamp) + 100_000
	video, audio := mediatest.Input{Track: v.Track}, mediatest.Input{Track: a.Track}
	for i := range loops {
		video.Frames = append(video.Frames, v.Shift(int64(i)*d).Frames...)
		audio.Frames = append(audio.Frames, a.Shift(int64(i)*d).Frames...)
	}
	lim := uint64(limit)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		t.Skipf("cannot limit the file size: %v", err)
	}
	mediatest.Feed(t, w, video, audio)
	if err := w.Close(); err != nil {
		t.Fatalf("the muxer's Close: %v (its Writes are buffered)", err)
	}
	if ew.n < limit+limit/2 {
		t.Fatalf("the muxer wrote %d bytes: want half as much again as the limit of %d", ew.n, limit)
	}
	err = o.Close()
	fmt.Printf("CLOSE: %v\n", err)
	if we := (*WriteError)(nil); !errors.As(err, &we) || !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("the file output's Close: %v, want a *WriteError of the file size limit", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// The Writes that fit: every one that ends at or under the limit.
	i, _ := slices.BinarySearch(ew.ends, limit+1)
	var fit int64
	if i > 0 {
		fit = ew.ends[i-1]
	}
	if st.Size() != fit {
		t.Fatalf("the file holds %d bytes of the %d the muxer wrote; the whole Writes that fit under the limit of %d end at %d", st.Size(), ew.n, limit, fit)
	}
}
