package record

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// allocated is how many bytes of disk the file at path holds.
func allocated(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// TestAFileOutputOnExt4ReservesTheBlocksAheadOfItsAppendsAndGivesThemBackOnClose:
// while written, the file holds blocks past its end (reserved, the size
// unchanged); once closed, no more than its size rounded up to a block,
// and its bytes are what was written.
func TestAFileOutputOnExt4ReservesTheBlocksAheadOfItsAppendsAndGivesThemBackOnClose(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type != unix.EXT4_SUPER_MAGIC {
		t.Skipf("%s is not on ext4 (reserving is for ext4 only)", dir)
	}
	p := filepath.Join(dir, "x")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// The flush timer is kept out of the way: the test flushes.
	o := &FileOutput{flushingWriter: newFlushingWriter(&appendOrUndo{f: f}, outputBufferSize, time.Hour), f: f, name: p}
	var want []byte
	for i := range 5 {
		b := bytes.Repeat([]byte{byte('a' + i)}, 700<<10)
		want = append(want, b...)
		if _, err := o.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := o.Flush(); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != int64(len(want)) {
			t.Fatalf("after %d writes the file's size is %d, want %d: the reservation must not change it", i+1, st.Size(), len(want))
		}
		if a, end := allocated(t, p), (int64(len(want))+4095)/4096*4096; a <= end {
			t.Fatalf("after %d writes (%d bytes) the file holds %d bytes of disk, want blocks reserved past its end", i+1, len(want), a)
		}
	}
	// What a muxer's finish does: write back inside the file.
	if _, err := o.Seek(10, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("head")); err != nil {
		t.Fatal(err)
	}
	copy(want[10:], "head")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	// Besides its data's blocks a file may hold a few of metadata (an
	// extent tree block when it is fragmented): far less than the least
	// reservation (1 MB).
	if a, max := allocated(t, p), (int64(len(want))+4095)/4096*4096+64<<10; a > max {
		t.Errorf("the closed file holds %d bytes of disk, want at most %d: the reservation was not given back", a, max)
	}
	if got, _ := os.ReadFile(p); !bytes.Equal(got, want) {
		t.Errorf("the file holds %d bytes that differ from the %d written", len(got), len(want))
	}
}
