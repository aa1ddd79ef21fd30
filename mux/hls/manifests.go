package hls

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
)

// The manifest directories: while a Writer holds the store (BatchStore),
// every name WriteFile writes is a symbolic link NAME -> .manifests/NAME,
// and its versions live in two directories, .manifests (what the links
// show) and .manifests.tmp (the spare). A publication writes each file it
// changes into the spare directory, in place, then swaps the two
// directories in one renameat2 exchange: every manifest of the boundary
// (the media playlists, the MPD, the multivariant playlist, the state)
// changes at once, for the kernel work of one exchange instead of one per
// file (docs/hls.md, Cost). Close turns the links back into the files
// they show, so a finished package is plain files at the names players
// and CDNs fetch; a killed one keeps the links, which players, HTTP
// servers and ffmpeg follow, until a run that continues it closes.
const (
	manifestDir   = ".manifests"
	manifestSpare = ".manifests.tmp"
)

// manifestSet is one of the two directories and the files in it, each
// with the version it holds.
type manifestSet struct {
	dir   *os.File
	fd    int
	files map[string]*manifestFile
}

type manifestFile struct {
	f   *os.File
	n   int64  // its length
	ver uint64 // the version it holds (0: none)
}

// manifests is the state of the manifest directories.
type manifests struct {
	live, spare *manifestSet
	ver         map[string]uint64 // the newest version of each name
	buf         []byte            // a version copied from one directory to the other
	linked      map[string]bool   // NAME is the link into .manifests
	gen         uint64
	pending     bool // a version not yet exchanged in
	// order is the names in the order first written: their links are
	// made in that order, so a playlist never shows before one it names
	// (the media playlists before the multivariant playlist).
	order []string
	// delta is, per name, where its newest version differs from the one
	// before, when the Writer said (WriteFileChanged).
	delta map[string]*manifestDelta
	spans []Span // the ranges a patch writes
}

// manifestDelta is where version ver of a name, n bytes long, differs from
// version pred: within spans and past pred's end (known), or anywhere
// (!known).
type manifestDelta struct {
	ver, pred uint64
	n         int
	known     bool
	spans     []Span
}

// manifestsOn reports whether WriteFile goes through the manifest
// directories, setting them up on the first call after Hold. It returns
// false where they cannot be used (no *at calls, no exchange): WriteFile
// then swaps each file as before.
func (s *DirStore) manifestsOn() (bool, error) {
	if s.m != nil {
		return true, nil
	}
	if !s.held || s.fd < 0 || s.noExchange || s.noManifests {
		return false, nil
	}
	m := &manifests{ver: map[string]uint64{}, linked: map[string]bool{}, delta: map[string]*manifestDelta{}}
	var err error
	if m.live, err = s.openSet(manifestDir); err != nil {
		return false, err
	}
	if m.spare, err = s.openSet(manifestSpare); err != nil {
		m.live.close()
		return false, err
	}
	// Whether the file system exchanges directories: twice, so each
	// keeps its name.
	for range 2 {
		if ok, supported := exchangeAt(s.fd, manifestSpare, manifestDir); !ok {
			m.live.close()
			m.spare.close()
			if !supported {
				s.noManifests = true
				_ = rmdirAt(s.fd, manifestSpare)
				_ = rmdirAt(s.fd, manifestDir)
				return false, nil
			}
			return false, fmt.Errorf("hls: exchanging %s: a manifest directory is missing", manifestDir)
		}
	}
	// The spare's files are versions nobody reads.
	if ents, err := m.spare.dir.ReadDir(-1); err == nil {
		for _, e := range ents {
			_ = unlinkAt(m.spare.fd, e.Name())
		}
	}
	// What an earlier run left showing (it was killed, or did not close)
	// stays the newest version of each name until written again: the
	// exchange must not show the spare's older copy of it.
	ents, err := m.live.dir.ReadDir(-1)
	if err != nil {
		m.live.close()
		m.spare.close()
		return false, err
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			_ = unlinkAt(m.live.fd, e.Name())
			continue
		}
		f, _, err := openAt(m.live.fd, e.Name(), os.O_RDWR, false)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		m.gen++
		m.ver[e.Name()] = m.gen
		m.order = append(m.order, e.Name())
		m.live.files[e.Name()] = &manifestFile{f: f, n: fi.Size(), ver: m.gen}
		m.linked[e.Name()] = isLinkInto(s.fd, e.Name())
	}
	s.m = m
	return true, nil
}

// openSet opens (and creates) the manifest directory name.
func (s *DirStore) openSet(name string) (*manifestSet, error) {
	if err := mkdirAt(s.fd, name); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	d, err := s.root.Open(name)
	if err != nil {
		return nil, err
	}
	return &manifestSet{dir: d, fd: dirFD(d), files: map[string]*manifestFile{}}, nil
}

func (ms *manifestSet) close() {
	for _, mf := range ms.files {
		mf.f.Close()
	}
	ms.dir.Close()
}

// put writes version ver of name into set ms, in place.
func (ms *manifestSet) put(name string, data []byte, ver uint64) error {
	mf := ms.files[name]
	if mf == nil {
		f, _, err := openAt(ms.fd, name, os.O_RDWR|os.O_CREATE, false)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		mf = &manifestFile{f: f, n: fi.Size()}
		ms.files[name] = mf
	}
	if _, err := mf.f.WriteAt(data, 0); err != nil {
		return err
	}
	if n := int64(len(data)); n < mf.n {
		if err := mf.f.Truncate(n); err != nil {
			return err
		}
	}
	mf.n, mf.ver = int64(len(data)), ver
	return nil
}

// stage writes data as name's next version into the spare directory; it
// shows at the next exchange.
func (s *DirStore) stage(name string, data []byte) error {
	m := s.m
	pred, ok := m.ver[name]
	if !ok {
		m.order = append(m.order, name)
	}
	m.gen++
	m.ver[name] = m.gen
	m.pending = true
	m.noteDelta(name, pred, len(data), false, nil)
	return m.spare.put(name, data, m.gen)
}

// stageChanged stages data as name's next version, as stage does, when
// the version before differs from it only within changed and past its
// end: the spare's copy of name, which is one or two versions behind (the
// one showing, or the one before it, exchanged out at the last
// publication), gets only the ranges that changed since the version it
// holds and what is past its end, not the whole file. Anything else (a
// spare that holds no copy, or a longer one, or another version, a
// version before whose changes are not known) writes it whole.
func (s *DirStore) stageChanged(name string, data []byte, changed []Span) error {
	m := s.m
	cur, ok := m.ver[name]
	d := m.delta[name]
	mf := m.spare.files[name]
	spans := append(m.spans[:0], changed...)
	switch {
	case !ok || d == nil || d.ver != cur || d.n > len(data) || mf == nil || mf.n > int64(d.n):
		return s.stageWhole(name, data, changed)
	case mf.ver == cur:
	case mf.ver == d.pred && d.known:
		spans = append(spans, d.spans...)
	default:
		return s.stageWhole(name, data, changed)
	}
	// What is past the end of the spare's version is new.
	if n := int(mf.n); n < len(data) {
		spans = append(spans, Span{n, len(data) - n})
	}
	m.spans = spans
	m.gen++
	m.ver[name] = m.gen
	m.pending = true
	m.noteDelta(name, cur, len(data), true, changed)
	for _, sp := range mergeSpans(spans, len(data)) {
		if _, err := mf.f.WriteAt(data[sp.Off:sp.Off+sp.Len], int64(sp.Off)); err != nil {
			mf.ver = 0 // what it holds is no version now
			return err
		}
	}
	mf.ver, mf.n = m.gen, int64(len(data))
	s.patched++
	return nil
}

// stageWhole stages data whole, noting that it differs from the version
// before within changed: the next version's changes bring the spare up to
// date.
func (s *DirStore) stageWhole(name string, data []byte, changed []Span) error {
	pred, ok := s.m.ver[name]
	d := s.m.delta[name]
	// The version before is no longer (the caller says so): known unless
	// what is known of it says otherwise.
	known := ok && (d == nil || d.ver != pred || d.n <= len(data))
	if err := s.stage(name, data); err != nil {
		return err
	}
	s.m.noteDelta(name, pred, len(data), known, changed)
	return nil
}

// noteDelta records where name's new version (m.gen) differs from version
// pred.
func (m *manifests) noteDelta(name string, pred uint64, n int, known bool, spans []Span) {
	d := m.delta[name]
	if d == nil {
		d = &manifestDelta{}
		m.delta[name] = d
	}
	d.ver, d.pred, d.n, d.known = m.gen, pred, n, known
	d.spans = append(d.spans[:0], spans...)
}

// spanGap is how far apart two ranges a patch writes may be and still be
// written as one: a write call costs more than copying a few kilobytes
// more of the version being written.
const spanGap = 4096

// mergeSpans sorts spans, clipped to n bytes, and joins those that
// overlap or lie within spanGap of each other, in place.
func mergeSpans(spans []Span, n int) []Span {
	slices.SortFunc(spans, func(a, b Span) int { return cmp.Compare(a.Off, b.Off) })
	out := spans[:0]
	for _, sp := range spans {
		end := min(sp.Off+sp.Len, n)
		if sp.Off < 0 || end <= sp.Off {
			continue
		}
		if k := len(out); k > 0 && sp.Off <= out[k-1].Off+out[k-1].Len+spanGap {
			out[k-1].Len = max(out[k-1].Len, end-out[k-1].Off)
			continue
		}
		out = append(out, Span{sp.Off, end - sp.Off})
	}
	return out
}

// exchangeIn exchanges the spare directory in, after bringing every name it
// holds an older version of up to date, and links the names that are not
// links yet.
func (s *DirStore) exchangeIn() error {
	m := s.m
	if !m.pending {
		return nil
	}
	for name, ver := range m.ver {
		if mf := m.spare.files[name]; mf == nil || mf.ver != ver {
			// Written in an earlier publication, not in this one (the
			// multivariant playlist, the state): its newest version
			// is the one showing.
			if err := m.copyLive(name); err != nil {
				return err
			}
		}
	}
	ok, supported := exchangeAt(s.fd, manifestSpare, manifestDir)
	if !ok {
		if !supported {
			return errors.New("hls: the file system cannot exchange the manifest directories")
		}
		return fmt.Errorf("hls: exchanging %s: a manifest directory is missing", manifestDir)
	}
	m.live, m.spare = m.spare, m.live
	m.pending = false
	for _, name := range m.order {
		if m.linked[name] {
			continue
		}
		if err := linkName(s.fd, name); err != nil {
			return err
		}
		m.linked[name] = true
	}
	return nil
}

// copyLive writes the version of name showing into the spare directory.
func (m *manifests) copyLive(name string) error {
	mf := m.live.files[name]
	if mf == nil || mf.ver != m.ver[name] {
		return fmt.Errorf("hls: %s: the newest version is in neither manifest directory", name)
	}
	if int64(cap(m.buf)) < mf.n {
		m.buf = make([]byte, mf.n)
	}
	b := m.buf[:mf.n]
	if _, err := mf.f.ReadAt(b, 0); err != nil {
		return err
	}
	return m.spare.put(name, b, mf.ver)
}

// closeManifests turns each link back into the file it shows and removes
// the manifest directories. A version staged and not exchanged in (the
// Writer failed within a publication) is dropped, as a kill would.
func (s *DirStore) closeManifests() error {
	m := s.m
	s.m = nil
	var err error
	for name := range m.linked {
		// The link and the file trade places; then the link, now in
		// .manifests, goes.
		if e := exchangeBetween(s.fd, name, m.live.fd, name); e != nil {
			if err == nil {
				err = e
			}
			continue
		}
		_ = unlinkAt(m.live.fd, name)
		if mf := m.live.files[name]; mf != nil {
			mf.f.Close()
			delete(m.live.files, name)
		}
	}
	for _, ms := range []*manifestSet{m.live, m.spare} {
		for name, mf := range ms.files {
			mf.f.Close()
			_ = unlinkAt(ms.fd, name)
		}
		ms.files = nil
		ms.dir.Close()
	}
	if err != nil {
		return err // the links that stay need .manifests
	}
	_ = rmdirAt(s.fd, manifestSpare)
	return rmdirAt(s.fd, manifestDir)
}

// Hold makes the files WriteFile writes from now on visible only at the
// next Release, all at once (BatchStore). On Linux their versions then
// live in two hidden directories swapped whole, the names being links
// into them until Close.
func (s *DirStore) Hold() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

// Release makes every file written since the last Release visible at once.
func (s *DirStore) Release() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		return nil
	}
	return s.exchangeIn()
}
