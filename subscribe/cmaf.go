package subscribe

import (
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
)

// The catalog's part in decoding a track: a cmaf track's init comes from
// the catalog (learnCatalog records it); package hang decodes.

// learnInit records the container of a cmaf rendition of broadcast path
// (its init). Called with s.mu held.
func (s *Session) learnInit(path, name string, ct *catalog.Container) {
	if s.cmafInits == nil {
		s.cmafInits = map[string]map[string]*catalog.Container{}
	}
	m := s.cmafInits[path]
	if m == nil {
		m = map[string]*catalog.Container{}
		s.cmafInits[path] = m
	}
	m[name] = ct
}

// learnRendition records rendition r of broadcast path as the catalog
// gives it, for its packaging's details (package hang: a loc clock, the
// framing of H.264 without a description). Called with s.mu held.
func (s *Session) learnRendition(path string, r catalog.Rendition) {
	if s.renditions == nil {
		s.renditions = map[string]map[string]catalog.Rendition{}
	}
	m := s.renditions[path]
	if m == nil {
		m = map[string]catalog.Rendition{}
		s.renditions[path] = m
	}
	m[r.Name] = r
}

// packaging returns the decoder setup of the track's container kind (a
// cmaf track's init from the catalog), with what the catalog says of the
// rendition when it is of that kind.
func (rb *remoteBroadcast) packaging(name, kind string) (hang.Track, error) {
	s := rb.s
	s.mu.Lock()
	r, ok := s.renditions[rb.path][name]
	s.mu.Unlock()
	if ok && string(r.Common().ContainerKind()) == kind {
		if t, err := hang.OfRendition(r); err == nil {
			return t, nil
		}
	}
	var ct *catalog.Container
	if hang.Kind(kind) == hang.CMAF {
		s.mu.Lock()
		ct = s.cmafInits[rb.path][name]
		s.mu.Unlock()
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
