package objstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The spool holds, per object being recorded, three files named by the
// object's spool id:
//
//	ID.media     the bytes the muxer wrote, as a local file output writes
//	             them (flushed within 500 ms); ranges uploaded as parts are
//	             punched out (fallocate), so it holds the head part, the
//	             parts waiting for the store and the tail
//	ID.json      the manifest: the object, the multipart upload, the parts
//	             the store took and, once the muxer closed, the final size
//	ID.head      the head of a finished MP4 (FinishHead), when there is one
//
// A live recorder holds an exclusive flock on ID.media; a manifest whose
// media file is not locked belongs to a recorder that died, and Recover
// completes its object.

// manifest is what the spool knows of one object.
type manifest struct {
	Version  int       `json:"version"`
	Bucket   string    `json:"bucket"`
	Key      string    `json:"key"`
	UploadID string    `json:"upload_id,omitempty"`
	HeadEnd  int64     `json:"head_end"` // part 1 is [0, HeadEnd); 0 until it is cut
	Parts    []partRec `json:"parts"`    // parts 2, 3, ... the store took, in order
	// EarlyHead says part 1 went up while recording (Options.EarlyHeadAfter).
	EarlyHead bool `json:"early_head,omitempty"`
	// HeadSplit says the head part's media, [InitEnd, HeadEnd), went up
	// as part 1 (GCS, Azure): the finish puts the header in front as
	// part 0.
	HeadSplit bool  `json:"head_split,omitempty"`
	InitEnd   int64 `json:"init_end,omitempty"`
	// Final is set when the muxer closed: the media file's size, and
	// where the bytes behind the head file begin (HeadFrom; -1: no head
	// file, the media file is the object).
	Final    int64 `json:"final,omitempty"`
	HeadFrom int64 `json:"head_from,omitempty"`
	Closed   bool  `json:"closed,omitempty"`
}

type partRec struct {
	N    int32  `json:"n"`
	Off  int64  `json:"off"`
	Size int64  `json:"size"`
	ETag string `json:"etag"`
}

// end is where the uploaded parts end (HeadEnd when none was uploaded).
func (m *manifest) end() int64 {
	if len(m.Parts) == 0 {
		return m.HeadEnd
	}
	p := m.Parts[len(m.Parts)-1]
	return p.Off + p.Size
}

const manifestVersion = 1

func writeManifest(path string, m *manifest) error {
	b, err := marshalManifest(m)
	if err != nil {
		return err
	}
	return writeManifestBytes(path, b)
}

// marshalManifest is the manifest's bytes on disk.
func marshalManifest(m *manifest) ([]byte, error) { return json.Marshal(m) }

// testHookManifestWrite, when set, runs before each manifest write. It is
// read by uploader goroutines that may outlive the test that set it.
var testHookManifestWrite atomic.Pointer[func()]

// writeManifestBytes replaces the manifest at path with b, whole.
func writeManifestBytes(path string, b []byte) error {
	if hook := testHookManifestWrite.Load(); hook != nil {
		(*hook)()
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readManifest(path string) (*manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("spool manifest %s: %w", path, err)
	}
	if m.Version != manifestVersion {
		return nil, fmt.Errorf("spool manifest %s: version %d, this build reads %d", path, m.Version, manifestVersion)
	}
	return &m, nil
}

// spoolPaths names the files of spool id in dir.
type spoolPaths struct{ media, manifest, head string }

func pathsOf(dir, id string) spoolPaths {
	base := filepath.Join(dir, id)
	return spoolPaths{media: base + ".media", manifest: base + ".json", head: base + ".head"}
}

func (p spoolPaths) remove() {
	os.Remove(p.head)
	os.Remove(p.manifest)
	os.Remove(p.media)
}

// lock takes the exclusive flock that says a live recorder owns f; it
// fails at once with errLocked when another holds it.
func lock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

var errLocked = errors.New("spool file in use by a running recorder")

// punch releases [off, off+size) of f's disk space, keeping its size (a
// sparse file). A file system that cannot punch keeps the bytes: the
// spool then grows with the recording.
func punch(f *os.File, off, size int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, size)
}

// body is a request body of byte ranges of files and memory: seekable, so
// the SDK can sign it and send it again, and never held in memory.
type body struct {
	parts []io.ReadSeeker
	sizes []int64
	size  int64
	pos   int64
}

func newBody(parts ...io.ReadSeeker) (*body, error) {
	b := &body{parts: parts}
	for _, p := range parts {
		n, err := p.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		if _, err := p.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		b.sizes = append(b.sizes, n)
		b.size += n
	}
	return b, nil
}

func (b *body) Read(p []byte) (int, error) {
	off := b.pos
	for i, r := range b.parts {
		if off >= b.sizes[i] {
			off -= b.sizes[i]
			continue
		}
		if _, err := r.Seek(off, io.SeekStart); err != nil {
			return 0, err
		}
		n, err := r.Read(p[:min(int64(len(p)), b.sizes[i]-off)])
		b.pos += int64(n)
		if err == io.EOF && n > 0 {
			err = nil
		}
		if err == io.EOF {
			return n, io.ErrUnexpectedEOF
		}
		return n, err
	}
	return 0, io.EOF
}

func (b *body) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += b.pos
	case io.SeekEnd:
		offset += b.size
	}
	if offset < 0 || offset > b.size {
		return 0, fmt.Errorf("objstore: seek to %d of a %d-byte body", offset, b.size)
	}
	b.pos = offset
	return offset, nil
}
