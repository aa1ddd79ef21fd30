package subscribe

import (
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// This file is the inverse of Options.Objects (objects kept as received,
// for an archive: hang.Decoder.Verbatim): Unpacker, an archive's objects
// made into the frames a subscription delivers. Package hang does the
// decoding both ways.

// Unpacker turns the objects of one track, as Options.Objects delivers
// them and an archive keeps them, into the frames a subscription without
// Objects delivers (codec payloads, keyframe flags of CMAF samples). It is
// used by one goroutine. The zero value unpacks a track without container
// (a catalog track): the payload at the object's time.
type Unpacker struct {
	pack hang.Track
	set  bool // pack was chosen (the zero value is raw)
	dec  hang.Decoder
	open bool // dec is a group's decoder
}

// NewUnpacker returns the unpacker of track, whose rendition has
// container c (nil: hang's legacy container; catalog tracks have none).
func NewUnpacker(track string, c *catalog.Container) (*Unpacker, error) {
	kind := hang.Legacy
	switch {
	case isCatalogTrack(track):
		kind = hang.Raw
	case c != nil && c.Kind != "":
		kind = hang.Kind(c.Kind)
	}
	if !hang.Decodable(string(kind)) || kind == hang.Raw && !isCatalogTrack(track) {
		return nil, fmt.Errorf("track %q: %w %q", track, ErrUnsupportedContainer, kind)
	}
	pack, err := hang.NewTrack(kind, c)
	if err != nil {
		if errors.Is(err, hang.ErrNoInit) {
			err = fmt.Errorf("%w: %w", catalog.ErrBadInit, err)
		}
		return nil, fmt.Errorf("track %q: %w", track, err)
	}
	return &Unpacker{pack: pack, set: true}, nil
}

// Group tells the unpacker that the next object opens a new group.
func (u *Unpacker) Group() {
	u.Close()
	if !u.set {
		u.pack, _ = hang.NewTrack(hang.Raw, nil)
		u.set = true
	}
	u.dec, u.open = u.pack.Decoder(), true
}

// Close releases the unpacker's demuxer.
func (u *Unpacker) Close() {
	if u.open {
		u.dec.Close()
		u.open = false
	}
}

// Unpack hands emit the frames of one object: ts is its media time in
// microseconds (Options.Objects' Frame.Timestamp), payload its bytes,
// which the frames may alias; ts is also a cmaf fragment's frame time. A
// marker object (an empty codec payload) gives a model.Frame.Marker.
func (u *Unpacker) Unpack(ts int64, payload []byte, emit func(model.Frame) error) error {
	if !u.open {
		u.Group()
	}
	if err := u.dec.Decode(hang.Object{Payload: payload, Timestamp: ts, Timescale: hang.Timescale, FrameTime: true}); err != nil {
		return err
	}
	for f, ok := u.dec.Next(); ok; f, ok = u.dec.Next() {
		if err := emit(f); err != nil {
			return err
		}
	}
	return nil
}
