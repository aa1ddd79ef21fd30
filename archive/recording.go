package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/moq-export/moq-export/archive/internal/layout"
	"github.com/moq-export/moq-export/catalog"
)

// Recording is one broadcast of an archive, opened for reading.
type Recording struct {
	a      *Archive
	name   string
	prefix string
	// Version is the format version of its objects (1 or 2).
	version  int
	catTrack string

	mu     sync.Mutex
	infos  map[string]layout.Info
	tracks map[string]*trackIndex
	// archiveScale is the unit of record pts (v2: ms; the catalog's
	// archive section may say otherwise).
	archiveScale uint64
	// v1: the broadcast timeline, found once (nil when it has none).
	v1Once sync.Once
	v1TL   *trackIndex
	v1Err  error
}

// timelineV1 returns the index of a v1 recording's broadcast timeline:
// the track its first catalog's archive section names, else
// layout.TimelineV1; nil when it holds no timeline records (then its
// media objects are listed).
func (r *Recording) timelineV1(ctx context.Context) (*trackIndex, error) {
	r.v1Once.Do(func() {
		name := layout.TimelineV1
		_, frames, err := r.Catalog(ctx, 0)
		if err != nil {
			r.v1Err = err
			return
		}
		for _, f := range frames {
			if sec, ok := layout.ParseArchiveSection(f.payload); ok && sec.Track != "" {
				name = sec.Track
				r.archiveScale = sec.Timescale
			}
		}
		ti := newTimelineV1(r.a, r.prefix, name)
		if _, _, ok, err := ti.bounds(ctx); err != nil {
			r.v1Err = err
		} else if ok {
			r.v1TL = ti
		}
	})
	return r.v1TL, r.v1Err
}

// Recording opens broadcast name: a GET of its catalog track's .info,
// nothing listed.
func (a *Archive) Recording(ctx context.Context, name string) (*Recording, error) {
	prefix, err := BroadcastPrefix(a.root, name)
	if err != nil {
		return nil, err
	}
	r := &Recording{a: a, name: strings.Trim(name, "/"), prefix: prefix, infos: map[string]layout.Info{},
		tracks: map[string]*trackIndex{}, archiveScale: layout.ArchiveTimescale}
	for _, ct := range layout.CatalogTracks {
		in, err := r.info(ctx, ct)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.version, r.catTrack = in.Version, ct
		return r, nil
	}
	return nil, fmt.Errorf("%w: %q (no catalog track under %s)", ErrNoBroadcast, name, prefix)
}

// Name returns the broadcast's name.
func (r *Recording) Name() string { return r.name }

// Version returns the format version of the recording's objects.
func (r *Recording) Version() int { return r.version }

// CatalogTrack returns the name of the catalog track it holds.
func (r *Recording) CatalogTrack() string { return r.catTrack }

func (r *Recording) info(ctx context.Context, track string) (layout.Info, error) {
	r.mu.Lock()
	in, ok := r.infos[track]
	r.mu.Unlock()
	if ok {
		return in, nil
	}
	b, err := r.a.get(ctx, layout.InfoKey(r.prefix, track))
	if err != nil {
		return layout.Info{}, err
	}
	if in, err = layout.ParseInfo(b); err != nil {
		return layout.Info{}, fmt.Errorf("track %q: %w", track, err)
	}
	r.mu.Lock()
	r.infos[track] = in
	r.mu.Unlock()
	return in, nil
}

// Has reports whether the recording holds track.
func (r *Recording) Has(ctx context.Context, track string) bool {
	_, err := r.info(ctx, track)
	return err == nil
}

func (r *Recording) index(ctx context.Context, track string) (*trackIndex, error) {
	in, err := r.info(ctx, track)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ti, ok := r.tracks[track]
	if !ok {
		ti = newTrackIndex(r.a, r.prefix, track, in.Timescale)
		r.tracks[track] = ti
	}
	return ti, nil
}

// forget drops what is known of track's records (a follower looks again).
func (r *Recording) forget(track string) {
	r.mu.Lock()
	delete(r.tracks, track)
	r.mu.Unlock()
}

// toPTS converts media time (µs) to record pts units.
func (r *Recording) toPTS(us int64) uint64 {
	if us <= 0 {
		return 0
	}
	return uint64(us) / 1000 * r.archiveScale / 1000
}

// micros converts record pts units to media time (µs).
func (r *Recording) micros(pts uint64) int64 {
	return micros(pts, r.archiveScale)
}

// micros converts a stored timestamp of a track at timescale to µs.
func micros(ts, scale uint64) int64 {
	if scale == 1_000_000 || scale == 0 {
		return int64(ts)
	}
	return int64(ts/scale*1_000_000 + ts%scale*1_000_000/scale)
}

// storedFrame is one frame as a track iterator yields it.
type storedFrame struct {
	group, index uint64
	ts           int64 // µs
	payload      []byte
}

// Catalog returns the catalog in effect at media time at (µs; the
// newest catalog record at or before it, else the oldest), its frames as
// stored, and its media time.
func (r *Recording) Catalog(ctx context.Context, at int64) (*catalog.Catalog, []storedFrame, error) {
	it, err := r.frames(ctx, r.catTrack, at, true)
	if err != nil {
		return nil, nil, err
	}
	var frames []storedFrame
	rd := catalog.NewReader(r.catTrack)
	var cat *catalog.Catalog
	for {
		f, ok, err := it.next(ctx)
		if err != nil {
			return nil, nil, err
		}
		if !ok || (len(frames) > 0 && f.group != frames[0].group) {
			break
		}
		frames = append(frames, f)
		if c, err := rd.Frame(f.group, f.index == 0, f.payload); err == nil && c != nil {
			cat = c
		}
	}
	if cat == nil {
		return nil, nil, fmt.Errorf("%w: %q holds no readable catalog", ErrNoBroadcast, r.name)
	}
	return cat, frames, nil
}
