package hls

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
)

// DirStore is a NewFileStore and a RangeStore over one directory, opened
// as an os.Root so no name leaves it. It is what record's directory
// packages write through.
//
// A rendition's media file (WriteRange) is kept open and written at the
// offset the Writer gives, each segment after the one before: a segment
// costs a write, not a new file (creating a file costs ext4 76-185 µs of
// kernel time, as much as all the rest of a segment; docs/hls.md, Cost).
//
// A segment (WriteNewFile) is written in place: no playlist names it
// before it is complete. A playlist, the MPD or the state (WriteFile) is
// written to a hidden spare file (".NAME.tmp") that is then swapped with
// NAME in one step where the system can (Linux renameat2 with
// RENAME_EXCHANGE; a rename otherwise): readers see the old file or the
// new, never a part. The swapped-out old version stays as the spare and
// is overwritten in place by the next write of NAME, a segment duration
// later, and removed by Close. The store keeps both files of each NAME
// open between writes (two descriptors per playlist, the MPD and the
// state), so a write is a write, the exchange and, only when the file
// shrinks, a truncate: no open or close.
//
// Why not a rename over NAME: on ext4, replacing an existing file by
// rename writes the new file's data out at once (its auto_da_alloc
// guard for programs that forget fsync), which costs 100-300 µs per
// playlist against about 5 µs for the exchange, and was most of what
// packaging cost over MP4 file output (docs/hls.md, Cost). Neither path
// fsyncs (like every output of moq-export): both survive a killed process;
// after a power loss the exchanged file, like an MP4 file's last
// fragments, may not. A reader that holds the previous version open for
// a whole segment duration may see it change under it.
//
// Held (BatchStore: a Writer holds its store), WriteFile on Linux goes
// through two manifest directories instead, swapped whole once per
// boundary, the names being links into them until Close (manifests.go):
// one exchange a boundary instead of one per file. WriteFileChanged
// (PatchStore) then writes into the spare directory's copy of a name only
// the bytes that changed since the version it holds (the MPD's and the
// media playlists' new lines), not the whole file.
//
// The spare of the package state (NAME.state.json) holds, after each of
// its writes, a version that nobody reads: no player reads the state, and
// a restart reads the live one. A name that needs a spare takes that one
// (a rename) instead of creating a file: at Close the multivariant
// playlist's last write takes the state's, written just before, and a
// package creates a file less and removes a spare less (docs/hls.md, Cost;
// on an ext4 without a journal each new file costs from 10 µs to a
// millisecond). A spare that was a player-read version is only ever
// overwritten by the next write of its own name, as before.
type DirStore struct {
	root *os.Root
	dir  *os.File // the directory, for renameat2
	fd   int      // dir's descriptor where the *at calls are used, else -1

	mu         sync.Mutex
	spares     map[string]bool     // spare names that may exist
	files      map[string]*pair    // the open files behind each name WriteFile wrote
	media      map[string]*os.File // the media files WriteRange writes, kept open
	noExchange bool                // the file system refused an exchange
	closed     bool
	// free names the state whose spare holds an old state, which another
	// name may take ("" when none).
	free string
	// created counts the files WriteFile created (live versions and
	// spares), for the tests.
	created int
	// held: a Writer publishes through Hold and Release, so WriteFile
	// goes through the manifest directories (m) where it can
	// (manifests.go); noManifests: it cannot here.
	held, noManifests bool
	m                 *manifests
	// patched counts the versions WriteFileChanged wrote as changes, for
	// the tests.
	patched int
}

// OpenDirStore opens the directory dir (which must exist) as a Store.
func OpenDirStore(dir string) (*DirStore, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, err
	}
	return &DirStore{root: root, dir: d, fd: dirFD(d), spares: map[string]bool{}, files: map[string]*pair{}, media: map[string]*os.File{}}, nil
}

// open opens name for reading and writing, creating it; when excl, only
// if it does not exist yet (created false, no file, when it does).
func (s *DirStore) open(name string, excl bool) (f *os.File, created bool, err error) {
	if s.fd >= 0 {
		return openAt(s.fd, name, os.O_RDWR|os.O_CREATE, excl)
	}
	flag := os.O_RDWR | os.O_CREATE
	if excl {
		flag |= os.O_EXCL
	}
	f, err = s.root.OpenFile(name, flag, 0o644)
	if excl && errors.Is(err, fs.ErrExist) {
		return nil, false, nil
	}
	return f, err == nil, err
}

// ErrName is wrapped by the refusal of a file name that is not a plain
// name of the directory.
var ErrName = errors.New("not a plain file name")

func plainName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) || strings.ContainsRune(name, 0) {
		return fmt.Errorf("hls: package file %q: %w", name, ErrName)
	}
	return nil
}

// WriteFile replaces name with data atomically.
func (s *DirStore) WriteFile(name string, data []byte) error {
	if err := plainName(name); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if on, err := s.manifestsOn(); err != nil || on {
		if err != nil {
			return err
		}
		return s.stage(name, data)
	}
	spare := "." + name + ".tmp"
	s.spares[spare] = true
	if !s.noExchange {
		if err := s.swapIn(name, spare, data, false); err == nil || !s.noExchange {
			return err
		}
	}
	// No O_TRUNC: truncating a file to nothing makes ext4 write it out at
	// close, as a rename over a file does. The spare is overwritten and
	// cut to the new length.
	f, err := s.root.OpenFile(spare, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, 0)
	if err == nil {
		err = f.Truncate(int64(len(data)))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(spare, name)
	}
	if err != nil {
		_ = s.root.Remove(spare)
		return err
	}
	return nil
}

// WriteFileChanged replaces name with data atomically, as WriteFile does
// (PatchStore). Held, on Linux, the spare manifest directory's copy of
// name gets only the ranges that changed since the version it holds;
// otherwise it is WriteFile.
func (s *DirStore) WriteFileChanged(name string, data []byte, changed []Span) error {
	if err := plainName(name); err != nil {
		return err
	}
	s.mu.Lock()
	on, err := s.manifestsOn()
	if err != nil || on {
		defer s.mu.Unlock()
		if err != nil {
			return err
		}
		return s.stageChanged(name, data, changed)
	}
	s.mu.Unlock()
	return s.WriteFile(name, data)
}

// pair is the two files behind a name WriteFile swaps: live is the one
// the name shows (nil before the first write), spare the one under the
// spare name (nil while there is none); their lengths.
type pair struct {
	live, spare       *os.File
	liveLen, spareLen int64
}

// swapIn writes data into name's spare file, kept open from the write
// before, and exchanges it with name: the two files of a name trade
// places at each write, without an open, a close or (while the file only
// grows, as an EVENT playlist does) a truncate. It sets s.noExchange and
// leaves name as it was when the file system cannot exchange.
func (s *DirStore) swapIn(name, spare string, data []byte, retried bool) error {
	p := s.files[name]
	if p == nil {
		p = &pair{}
		s.files[name] = p
	}
	if p.spare == nil && s.free != "" && s.free != name {
		s.takeFree(p, spare)
	}
	if p.spare == nil {
		// A new spare is empty; one an earlier run left is measured.
		f, created, err := s.open(spare, true)
		if created {
			s.created++
		}
		if err == nil && !created {
			f, _, err = s.open(spare, false)
		}
		if err != nil {
			return err
		}
		p.spare, p.spareLen = f, 0
		if !created {
			fi, err := f.Stat()
			if err != nil {
				f.Close()
				p.spare = nil
				return err
			}
			p.spareLen = fi.Size()
		}
	}
	if _, err := p.spare.WriteAt(data, 0); err != nil {
		return s.dropSpare(p, spare, err)
	}
	if n := int64(len(data)); n < p.spareLen {
		if err := p.spare.Truncate(n); err != nil {
			return s.dropSpare(p, spare, err)
		}
	}
	p.spareLen = int64(len(data))
	if p.live == nil {
		// Most likely the first write of name: placed in one call unless
		// an earlier run left it.
		ok, taken, supported, err := placeAt(s.fd, spare, name)
		switch {
		case ok:
			p.live, p.liveLen = p.spare, int64(len(data))
			p.spare, p.spareLen = nil, 0
			return nil
		case err != nil:
			err = s.dropSpare(p, spare, err)
			if errors.Is(err, fs.ErrNotExist) && !retried {
				return s.swapIn(name, spare, data, true)
			}
			return err
		case taken || !supported:
			// Exchanged with what the earlier run left, below.
		}
	}
	ok, supported := exchangeAt(s.fd, spare, name)
	switch {
	case ok:
		p.live, p.spare = p.spare, p.live
		p.liveLen, p.spareLen = int64(len(data)), p.liveLen
		if strings.HasSuffix(name, stateSuffix) {
			s.free = name // its spare is the state before: nobody reads it
		}
		return nil
	case !supported:
		s.noExchange = true
		s.closeFiles()
		return errors.New("hls: no exchange")
	}
	// name does not exist: the first write of it (or it was removed).
	if err := s.root.Rename(spare, name); err != nil {
		err = s.dropSpare(p, spare, err)
		if errors.Is(err, fs.ErrNotExist) && !retried {
			// The spare itself was gone (removed by someone else): once
			// more with a new one.
			return s.swapIn(name, spare, data, true)
		}
		return err
	}
	if p.live != nil {
		p.live.Close()
	}
	p.live, p.liveLen = p.spare, int64(len(data))
	p.spare, p.spareLen = nil, 0
	return nil
}

// takeFree gives p the spare of the state s.free names, renamed to p's
// spare name, when it holds an old state. It leaves p without a spare
// when it cannot (an earlier run left a file by that name, no renameat2):
// the caller then creates one.
func (s *DirStore) takeFree(p *pair, spare string) {
	q := s.files[s.free]
	from := "." + s.free + ".tmp"
	s.free = ""
	if q == nil || q.spare == nil {
		return
	}
	if ok, _, _, err := placeAt(s.fd, from, spare); !ok || err != nil {
		return
	}
	p.spare, p.spareLen = q.spare, q.spareLen
	q.spare, q.spareLen = nil, 0
	s.spares[from] = false // nothing to remove at Close, unless written again
}

// dropSpare closes and removes name's spare file after err.
func (s *DirStore) dropSpare(p *pair, spare string, err error) error {
	p.spare.Close()
	p.spare, p.spareLen = nil, 0
	_ = s.root.Remove(spare)
	return err
}

// closeFiles closes the files WriteFile keeps open.
func (s *DirStore) closeFiles() {
	for name, p := range s.files {
		for _, f := range []*os.File{p.live, p.spare} {
			if f != nil {
				f.Close()
			}
		}
		delete(s.files, name)
	}
}

// WriteNewFile writes a file no reader looks for yet (a segment) in place.
func (s *DirStore) WriteNewFile(name string, data []byte) error {
	if err := plainName(name); err != nil {
		return err
	}
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// mediaFile returns media file name, opened (and created) once and kept
// open for the writes of the recording.
func (s *DirStore) mediaFile(name string) (*os.File, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	if s.closed {
		return nil, os.ErrClosed
	}
	if f := s.media[name]; f != nil {
		return f, nil
	}
	f, _, err := s.open(name, false)
	if err != nil {
		return nil, err
	}
	s.media[name] = f
	return f, nil
}

// WriteRange writes data at offset off of media file name (a rendition's
// init segments and segments, one after another): no open, no new file,
// per segment.
func (s *DirStore) WriteRange(name string, off int64, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.mediaFile(name)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(data, off)
	return err
}

// ErrShort is wrapped by the refusal to read or keep a range a media file
// does not hold.
var ErrShort = errors.New("the file is shorter than its package names")

// TruncateRange cuts media file name to size bytes; an error wrapping
// ErrShort when it holds fewer.
func (s *DirStore) TruncateRange(name string, size int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := s.mediaFile(name)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.Size() < size:
		return fmt.Errorf("hls: %s holds %d bytes, its package names %d: %w", name, fi.Size(), size, ErrShort)
	case fi.Size() > size:
		return f.Truncate(size)
	}
	return nil
}

// ReadRange returns n bytes of name from offset off; an error wrapping
// ErrShort when it holds fewer.
func (s *DirStore) ReadRange(name string, off int64, n int) ([]byte, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.media[name]
	if f == nil {
		var err error
		if f, err = s.root.Open(name); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	b := make([]byte, n)
	got, err := f.ReadAt(b, off)
	if got == n {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = fmt.Errorf("hls: %s: %d bytes at %d: %w", name, n, off, ErrShort)
	}
	return nil, err
}

// ReadFile returns the content of name.
func (s *DirStore) ReadFile(name string) ([]byte, error) {
	if err := plainName(name); err != nil {
		return nil, err
	}
	f, err := s.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// Close removes the spare files and closes the directory. The package's
// files stay.
func (s *DirStore) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var err error
	if s.m != nil {
		err = s.closeManifests()
	}
	s.closeFiles()
	for name, f := range s.media {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		delete(s.media, name)
	}
	for spare, may := range s.spares {
		if may {
			_ = s.root.Remove(spare)
		}
	}
	s.dir.Close()
	if rerr := s.root.Close(); err == nil {
		err = rerr
	}
	return err
}
