//go:build unix

package mp4_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/proctest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// fullFinishChildEnv makes the test binary the recorder of
// TestFinishOnAFullDiskLeavesTheFragments, which runs out of space during
// the finish.
const fullFinishChildEnv = "MP4_TEST_FULL_FINISH_CHILD"

// TestFinishOnAFullDiskLeavesTheFragments: when the disk fills while the
// finish copies the first fragments' samples to the end (here a file size
// limit that lets the recording end but not grow), Close says the file stays
// fragmented, and it does: the same bytes as before the finish, every
// frame decoding. The recorder runs in a child process, since the limit
// is the whole process's.
func TestFinishOnAFullDiskLeavesTheFragments(t *testing.T) {
	if path := os.Getenv(fullFinishChildEnv); path != "" {
		recordThenFinishOnAFullDisk(t, path)
		return
	}
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 2), loop(mediatest.SampleInput("aac", 2), 2)}
	want, err := os.ReadFile(muxFile(t, "stream.mp4", false, mp4.Options{}, ins...))
	if err != nil {
		t.Fatal(err)
	}
	path := tempPath(t, "full-finish.mp4")
	cmd := proctest.Command(os.Args[0], "-test.run=^TestFinishOnAFullDiskLeavesTheFragments$")
	cmd.Env = append(os.Environ(), fullFinishChildEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "CLOSE: ") || !strings.Contains(string(out), "stays fragmented (playable)") {
		t.Fatalf("Close did not say the file stays fragmented:\n%s", out)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the file after the failed finish (%d bytes) is not the fragmented recording (%d bytes)", len(got), len(want))
	}
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	for i, in := range ins {
		checkPackets(t, path, p, i, in, origin(ins...), 1000)
	}
}

// recordThenFinishOnAFullDisk is the child's part: record, let the file
// grow by no more than a few bytes, Close, print Close's error.
func recordThenFinishOnAFullDisk(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := mp4.NewWriter(f, mp4.Options{Path: path})
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 2), loop(mediatest.SampleInput("aac", 2), 2)}
	mediatest.Feed(t, w, ins...)
	// Close writes the last fragment through f first: leave room for it.
	st, _ := f.Stat()
	limit := uint64(st.Size()) + 64<<10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		t.Skipf("cannot limit the file size: %v", err)
	}
	err = w.Close()
	fmt.Printf("CLOSE: %v\n", err)
	if err == nil {
		t.Fatal("the finish succeeded within the limit: make the recording longer")
	}
	if st, _ := f.Stat(); uint64(st.Size()) >= limit {
		t.Fatalf("the last fragment did not fit under the limit of %d bytes", limit)
	}
}
