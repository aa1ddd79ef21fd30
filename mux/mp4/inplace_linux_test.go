package mp4_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/moq-export/moq-export/internal/mediatest"
	"github.com/moq-export/moq-export/mux/mp4"
)

// insertRangeWorks reports whether the file system of dir can insert a
// block range into a file (fallocate FALLOC_FL_INSERT_RANGE: ext4, XFS).
func insertRangeWorks(t *testing.T, dir string) bool {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "probe"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*4096)); err != nil {
		t.Fatal(err)
	}
	return syscall.Fallocate(int(f.Fd()), 0x20, 0, 4096) == nil
}

// TestFinishInPlaceKeepsTheSamplesWhereTheyAre: where the file system can
// insert blocks, the finish changes the recording's first blocks only: the
// same file (inode) grows by whole blocks in front, and every byte of the
// fragments stays as it was, now inside the mdat.
func TestFinishInPlaceKeepsTheSamplesWhereTheyAre(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	f, path := mediatest.CreateFile(t, "inplace.mp4")
	if !insertRangeWorks(t, filepath.Dir(path)) {
		t.Skipf("the file system of %s cannot insert ranges (not ext4 or XFS): the finish copies there, which TestEveryCodec... checks", filepath.Dir(path))
	}
	ins := []mediatest.Input{loop(mediatest.SampleInput("h264", 1), 2), loop(mediatest.SampleInput("aac", 2), 2)}
	w := mp4.NewWriter(f, mp4.Options{Path: path})
	mediatest.Feed(t, w, ins...)
	before, err := os.ReadFile(path) // the fragments, all but the last
	if err != nil {
		t.Fatal(err)
	}
	st0, _ := os.Stat(path)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if c := w.Counters(); !c.Finished || !c.FinishedInPlace {
		t.Fatalf("counters %+v, want finished in place", c)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(path)
	if !os.SameFile(st0, st1) {
		t.Error("the finish replaced the file instead of changing it in place")
	}
	grown := int64(len(after)) - int64(len(before)) // the last fragment, written at Close, and the blocks in front
	first := bytes.Index(before, []byte("moof")) - 4
	if first != 4096 {
		t.Fatalf("the first fragment starts at %d, want 4096 (the padded header)", first)
	}
	// Find the inserted length: the fragments' bytes reappear shifted by it.
	shift := int64(-1)
	for s := int64(0); s <= grown; s += 4096 {
		if bytes.Equal(after[s+int64(first):s+int64(len(before))], before[first:]) {
			shift = s
			break
		}
	}
	if shift < 0 {
		t.Fatal("the fragments' bytes did not stay as they were, shifted by whole blocks")
	}
	t.Logf("inserted %d bytes in front of %d bytes of fragments", shift, len(before)-first)
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	for i, in := range ins {
		checkPackets(t, path, p, i, in, 0, 1000)
	}
}
