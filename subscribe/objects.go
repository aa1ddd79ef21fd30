package subscribe

import (
	"fmt"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/cmaf"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe/internal/container"
)

// This file is Options.Objects (objects kept as received, for an archive)
// and its inverse, Unpacker (an archive's objects made into the frames a
// subscription delivers): the two directions of the same container
// knowledge as decodeFrame and cmafGroup, kept here so no other package
// learns the containers.

// objectFrame is the frame Options.Objects delivers for payload: decoded
// is what decodeFrame made of it (its timestamp is the media time); for a
// cmaf track (cg set) the first sample's time, the wire time without one.
func objectFrame(cg *cmafGroup, decoded model.Frame, payload []byte) model.Frame {
	f := model.Frame{Timestamp: decoded.Timestamp, Payload: payload}
	if cg != nil {
		if samples, err := cg.d.Fragment(payload); err == nil && len(samples) > 0 {
			f.Timestamp = samples[0].Timestamp
		}
	}
	return f
}

// Unpacker turns the objects of one track, as Options.Objects delivers
// them and an archive keeps them, into the frames a subscription without
// Objects delivers (codec payloads, keyframe flags of CMAF samples). It is
// used by one goroutine.
type Unpacker struct {
	kind string
	init *cmaf.Init
	cg   *cmafGroup
}

// NewUnpacker returns the unpacker of track, whose rendition has
// container c (nil: hang's legacy container; catalog tracks have none).
func NewUnpacker(track string, c *catalog.Container) (*Unpacker, error) {
	if isCatalogTrack(track) {
		return &Unpacker{kind: kindRaw}, nil
	}
	if c == nil {
		return &Unpacker{kind: container.Legacy}, nil
	}
	switch c.Kind {
	case "", catalog.ContainerLegacy:
		return &Unpacker{kind: container.Legacy}, nil
	case catalog.ContainerLOC:
		return &Unpacker{kind: container.LOC}, nil
	case catalog.ContainerCMAF:
		b, err := c.DecodeInit()
		if err != nil {
			return nil, fmt.Errorf("track %q: %w", track, err)
		}
		in, err := cmaf.ParseInit(b)
		if err != nil {
			return nil, fmt.Errorf("track %q: %w: %w", track, catalog.ErrBadInit, err)
		}
		return &Unpacker{kind: container.CMAF, init: in}, nil
	}
	return nil, fmt.Errorf("track %q: %w %q", track, ErrUnsupportedContainer, c.Kind)
}

// Group tells the unpacker that the next object opens a new group.
func (u *Unpacker) Group() {
	if u.init == nil {
		return
	}
	if u.cg != nil {
		u.cg.close()
	}
	u.cg = newCMAFGroup(u.init)
}

// Close releases the unpacker's demuxer.
func (u *Unpacker) Close() {
	if u.cg != nil {
		u.cg.close()
		u.cg = nil
	}
}

// Unpack hands emit the frames of one object: ts is its media time in
// microseconds (Options.Objects' Frame.Timestamp), payload its bytes,
// which the frames may alias. A marker object (an empty legacy or loc
// payload) gives none.
func (u *Unpacker) Unpack(ts int64, payload []byte, emit func(model.Frame) error) error {
	switch u.kind {
	case container.CMAF:
		if u.cg == nil {
			u.Group()
		}
		return u.cg.write(payload, emit)
	case kindRaw:
		return emit(model.Frame{Timestamp: ts, Payload: payload})
	}
	f, ok, err := decodeFrame(u.kind, ts, 1_000_000, payload)
	if err != nil || !ok {
		return err
	}
	return emit(f)
}
