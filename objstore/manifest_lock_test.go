package objstore_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/objstore"
)

// TestTheMuxersWritesDoNotWaitForTheSpoolManifest: after each part the
// uploader rewrites the spool manifest (a write and a rename, which can
// take long on a busy disk). The muxer's writes must not wait for it: with
// the manifest write after the first uploaded part held, the recording
// still writes two more parts' worth. Before, the uploader held the file's
// lock during the rename, and a fleet of 100 recordings into s3:// lost
// frames behind it.
func TestTheMuxersWritesDoNotWaitForTheSpoolManifest(t *testing.T) {
	s := s3test.Start(t)
	s.Bucket(t, "rec")
	release := make(chan struct{})
	var writes atomic.Int32
	held := make(chan struct{})
	var once sync.Once
	restore := objstore.SetManifestWriteHook(func() {
		// Write 1 is the new file's, write 2 names the upload, write 3
		// follows the first part uploaded.
		if writes.Add(1) == 3 {
			once.Do(func() { close(held) })
			<-release
		}
	})
	defer restore()
	out := open(t, s, "s3://rec/lock/{broadcast}.ts", objstore.Options{PartSize: objstore.MinPartSize})
	f, err := out.Create("demo", 0, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte{0x47}, 188*348) // TS packets, about 64 KB
	write := func(n int64) {
		for w := int64(0); w < n; w += int64(len(chunk)) {
			if _, err := f.Write(chunk); err != nil {
				t.Error(err)
				return
			}
		}
	}
	// The head part, then part 2 (cut at the write past it, uploaded).
	write(2*objstore.MinPartSize + int64(len(chunk)))
	select {
	case <-held: // the manifest write after part 2 is held
	case <-time.After(20 * time.Second):
		t.Fatal("no manifest write after the first part uploaded")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		write(2 * objstore.MinPartSize)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		close(release)
		<-done
		t.Fatal("the muxer's writes waited for the spool manifest")
	}
	close(release)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
