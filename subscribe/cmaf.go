package subscribe

import (
	"fmt"
	"sync"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/cmaf"
	"github.com/moq-export/moq-export/model"
)

// This file is the subscriber's side of the "cmaf" container: the init
// comes from the catalog (learnCatalog records it), every frame is one or
// more moof+mdat whose samples become model frames with microsecond
// timestamps and keyframes from the bitstream (package internal/cmaf does
// the parsing).

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

// openCMAF parses the init of a cmaf track, as the catalog gives it.
func (rt *remoteTrack) openCMAF() error {
	s := rt.rb.s
	s.mu.Lock()
	ct := s.cmafInits[rt.rb.path][rt.name]
	s.mu.Unlock()
	if ct == nil {
		return fmt.Errorf("track %q: %w: cmaf track without an init in the catalog", rt.name, ErrUnsupportedContainer)
	}
	b, err := ct.DecodeInit()
	if err != nil {
		return fmt.Errorf("track %q: %w", rt.name, err)
	}
	in, err := cmaf.ParseInit(b)
	if err != nil {
		return fmt.Errorf("track %q: %w: %w", rt.name, catalog.ErrBadInit, err)
	}
	rt.cmafInit = in
	return nil
}

// demuxers recycles the per-group CMAF demuxers (group streams of one
// track are read concurrently, each with its own).
var demuxers = sync.Pool{New: func() any { return new(cmaf.Demuxer) }}

// cmafGroup writes the samples of a group stream's CMAF frames into g.
type cmafGroup struct {
	d *cmaf.Demuxer
	// broken is set after a bad frame: its samples are lost, so delta
	// samples are dropped until a keyframe.
	broken bool
}

func newCMAFGroup(in *cmaf.Init) *cmafGroup {
	d := demuxers.Get().(*cmaf.Demuxer)
	d.Reset(in)
	return &cmafGroup{d: d}
}

// write demuxes one frame and hands its samples to emit (a group's
// WriteFrame). The samples' payloads alias payload, which the group keeps.
func (cg *cmafGroup) write(payload []byte, emit func(model.Frame) error) error {
	samples, err := cg.d.Fragment(payload)
	if err != nil {
		cg.broken = true
		return err
	}
	for _, smp := range samples {
		if cg.broken && !smp.Keyframe {
			continue
		}
		cg.broken = false
		sync := model.SyncDelta
		if smp.Keyframe {
			sync = model.SyncKey
		}
		if err := emit(model.Frame{Timestamp: smp.Timestamp, Payload: smp.Payload, Sync: sync}); err != nil {
			return err
		}
	}
	return nil
}

func (cg *cmafGroup) close() {
	cg.d.Reset(nil)
	demuxers.Put(cg.d)
}
