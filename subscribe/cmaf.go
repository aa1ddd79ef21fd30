package subscribe

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
)

// The catalog's part in decoding a track: a track's container kind, a
// cmaf track's init and the rendition's details come from the catalog
// (renditions records them); package hang decodes.

// renditions are the renditions the broadcasts' catalogs declared, by
// broadcast path and track name, the latest catalog's winning.
type renditions struct {
	mu sync.Mutex
	m  map[string]map[string]catalog.Rendition
}

// learn records every rendition of c, the catalog of broadcast path,
// under the broadcast it names ("broadcast" references resolved against
// path; one that escapes the root is ignored).
func (rs *renditions) learn(path string, c *catalog.Catalog, log *slog.Logger) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range c.Renditions() {
		bpath := path
		if b := r.Common().Broadcast; b != nil {
			p, ok := ResolveBroadcast(path, *b)
			if !ok {
				log.Warn("moq: rendition broadcast escapes the root, ignored", "broadcast", path, "rendition", r.Name)
				continue
			}
			bpath = p
		}
		if rs.m == nil {
			rs.m = map[string]map[string]catalog.Rendition{}
		}
		m := rs.m[bpath]
		if m == nil {
			m = map[string]catalog.Rendition{}
			rs.m[bpath] = m
		}
		m[r.Name] = r
	}
}

// of returns rendition name of broadcast path, if a catalog declared it.
func (rs *renditions) of(path, name string) (catalog.Rendition, bool) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[path][name]
	return r, ok
}

// packaging returns the decoder setup of the track's container kind (a
// cmaf track's init from the catalog), with what the catalog says of the
// rendition when it is of that kind.
func (rb *remoteBroadcast) packaging(name, kind string) (hang.Track, error) {
	r, ok := rb.s.learnt.of(rb.path, name)
	if ok && string(r.Common().ContainerKind()) == kind {
		if t, err := hang.OfRendition(r); err == nil {
			return t, nil
		}
	}
	var ct *catalog.Container
	if ok && hang.Kind(kind) == hang.CMAF && r.Common().ContainerKind() == catalog.ContainerCMAF {
		ct = r.Common().Container
	}
	t, err := hang.NewTrack(hang.Kind(kind), ct)
	switch {
	case errors.Is(err, hang.ErrNoInit):
		return t, fmt.Errorf("track %q: %w: %w", name, ErrUnsupportedContainer, err)
	case err != nil:
		return t, fmt.Errorf("track %q: %w", name, err)
	}
	return t, nil
}
