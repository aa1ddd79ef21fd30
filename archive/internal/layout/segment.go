package layout

import (
	"fmt"
	"math"

	"github.com/moq-export/moq-export/internal/varint"
)

// Frame is one stored frame: its timestamp in the track's timescale and
// its original payload bytes (no moq-lite FRAME header).
type Frame struct {
	Timestamp uint64
	Payload   []byte
}

// Group is the part of one MoQ group an object stores.
type Group struct {
	Sequence uint64
	Frames   []Frame
}

// Segment is a segment object: the frames of one record of a track (or,
// for a timeline track, the timeline groups closed with that record).
type Segment struct {
	// Version is the envelope version: 2 (written) or 1 (read).
	Version int
	// FrameStart is the index, within the first group, of its first
	// stored frame (v2; a group split across records). Later groups start
	// at frame 0.
	FrameStart uint64
	Groups     []Group
}

// Position is a place in a track: a group and a frame index within it.
type Position struct {
	Group uint64
	Frame uint64
}

// AppendSegment appends the object bytes of s (version 2, or 1 when
// s.Version is 1, which only tests use) to b.
func AppendSegment(b []byte, s Segment) ([]byte, error) {
	if len(s.Groups) == 0 {
		return b, ErrEmpty
	}
	switch s.Version {
	case 0, 2:
		b = varint.Append(b, 2)
		b = varint.Append(b, s.FrameStart)
	case 1:
		if s.FrameStart != 0 {
			return b, fmt.Errorf("%w: a version 1 object has no frame start", ErrVersion)
		}
		b = varint.Append(b, 1)
	default:
		return b, fmt.Errorf("%w: segment version %d", ErrVersion, s.Version)
	}
	if s.FrameStart > IDMax {
		return b, malformed("segment", "frame start %d above 2^53-1", s.FrameStart)
	}
	b = varint.Append(b, uint64(len(s.Groups)))
	var off uint64
	for i, g := range s.Groups {
		if g.Sequence > IDMax {
			return b, malformed("segment", "group %d above 2^53-1", g.Sequence)
		}
		if i == 0 {
			b = varint.Append(b, g.Sequence)
		} else {
			prev := s.Groups[i-1].Sequence
			if g.Sequence <= prev {
				return b, malformed("segment", "group %d after %d", g.Sequence, prev)
			}
			b = varint.Append(b, g.Sequence-prev-1)
		}
		b = varint.Append(b, uint64(len(g.Frames)))
		for _, f := range g.Frames {
			if f.Timestamp > IDMax {
				return b, malformed("segment", "timestamp %d above 2^53-1", f.Timestamp)
			}
			b = varint.Append(b, f.Timestamp)
			b = varint.Append(b, off)
			b = varint.Append(b, uint64(len(f.Payload)))
			off += uint64(len(f.Payload))
		}
	}
	for _, g := range s.Groups {
		for _, f := range g.Frames {
			b = append(b, f.Payload...)
		}
	}
	return b, nil
}

// reader walks a table of varints.
type reader struct {
	b   []byte
	off int
	obj string
}

func (r *reader) varint(what string) (uint64, error) {
	v, n, err := varint.Parse(r.b[r.off:])
	if err != nil {
		return 0, malformed(r.obj, "%s at byte %d: truncated varint", what, r.off)
	}
	r.off += n
	return v, nil
}

func (r *reader) left() int { return len(r.b) - r.off }

// ParseSegment reads a segment object of version 2 or 1. It checks the
// whole table before it slices a payload: counts bounded by the bytes
// left, sequences strictly ascending, values at most 2^53-1, offsets that
// tile the payload exactly. The frames' payloads alias b.
func ParseSegment(b []byte) (Segment, error) {
	r := &reader{b: b, obj: "segment"}
	ver, err := r.varint("version")
	if err != nil {
		return Segment{}, err
	}
	s := Segment{Version: int(min(ver, math.MaxInt32))}
	switch ver {
	case 2:
		if s.FrameStart, err = r.varint("frame start"); err != nil {
			return Segment{}, err
		}
		if s.FrameStart > IDMax {
			return Segment{}, malformed("segment", "frame start %d above 2^53-1", s.FrameStart)
		}
	case 1:
	default:
		return Segment{}, fmt.Errorf("%w: segment version %d", ErrVersion, ver)
	}
	count, err := r.varint("group count")
	if err != nil {
		return Segment{}, err
	}
	if count == 0 {
		return Segment{}, ErrEmpty
	}
	if count > uint64(r.left()/2) {
		return Segment{}, malformed("segment", "%d groups in %d bytes", count, r.left())
	}
	s.Groups = make([]Group, 0, count)
	type span struct{ off, n uint64 }
	var spans []span
	var end, prev uint64
	for i := range count {
		delta, err := r.varint("group sequence")
		if err != nil {
			return Segment{}, err
		}
		seq := delta
		if i > 0 {
			if delta > IDMax || prev+delta+1 > IDMax {
				return Segment{}, malformed("segment", "group sequence past 2^53-1")
			}
			seq = prev + delta + 1
		} else if seq > IDMax {
			return Segment{}, malformed("segment", "group %d above 2^53-1", seq)
		}
		prev = seq
		nf, err := r.varint("frame count")
		if err != nil {
			return Segment{}, err
		}
		if nf > uint64(r.left()/3) {
			return Segment{}, malformed("segment", "%d frames in %d bytes", nf, r.left())
		}
		g := Group{Sequence: seq, Frames: make([]Frame, nf)}
		for j := range g.Frames {
			ts, err := r.varint("timestamp")
			if err != nil {
				return Segment{}, err
			}
			if ts > IDMax {
				return Segment{}, malformed("segment", "timestamp %d above 2^53-1", ts)
			}
			off, err := r.varint("payload offset")
			if err != nil {
				return Segment{}, err
			}
			n, err := r.varint("payload length")
			if err != nil {
				return Segment{}, err
			}
			if off != end {
				return Segment{}, malformed("segment", "payload offset %d, want %d (payloads must tile)", off, end)
			}
			if n > uint64(len(b)) || end+n > uint64(len(b)) {
				return Segment{}, malformed("segment", "payload length %d past the object", n)
			}
			end += n
			g.Frames[j].Timestamp = ts
			spans = append(spans, span{off, n})
		}
		s.Groups = append(s.Groups, g)
	}
	payload := b[r.off:]
	if end != uint64(len(payload)) {
		return Segment{}, malformed("segment", "table covers %d payload bytes, object has %d", end, len(payload))
	}
	k := 0
	for gi := range s.Groups {
		for fi := range s.Groups[gi].Frames {
			sp := spans[k]
			s.Groups[gi].Frames[fi].Payload = payload[sp.off : sp.off+sp.n : sp.off+sp.n]
			k++
		}
	}
	return s, nil
}

// CheckSpan checks the v2 span rule: a recorded track's object holds
// exactly the frames of its record's span [start, end), its groups
// consecutive and none empty.
func CheckSpan(s Segment, start, end Position) error {
	if err := checkInside(s); err != nil {
		return err
	}
	if s.Groups[0].Sequence != start.Group || s.FrameStart != start.Frame {
		return malformed("segment", "starts at %d/%d, record starts at %d/%d", s.Groups[0].Sequence, s.FrameStart, start.Group, start.Frame)
	}
	last := Last(s)
	switch {
	case end.Frame == 0 && last.Group+1 == end.Group:
		return nil
	case end.Frame > 0 && last.Group == end.Group && last.Frame == end.Frame:
		return nil
	}
	return malformed("segment", "ends at %d/%d, record ends at %d/%d", last.Group, last.Frame, end.Group, end.Frame)
}

// checkInside checks the part of the span rule a segment can be held to
// alone: its groups consecutive and none empty.
func checkInside(s Segment) error {
	if len(s.Groups) == 0 {
		return ErrEmpty
	}
	for i, g := range s.Groups {
		if len(g.Frames) == 0 {
			return malformed("segment", "group %d is empty", g.Sequence)
		}
		if i > 0 && g.Sequence != s.Groups[i-1].Sequence+1 {
			return malformed("segment", "group %d after %d: a hole inside a record", g.Sequence, s.Groups[i-1].Sequence)
		}
	}
	return nil
}

// Last returns where a v2 segment (of at least one group) ends: its last
// group, and how many of that group's frames the track's records hold up
// to and including this one (the frame index after its last frame).
func Last(s Segment) Position {
	g := s.Groups[len(s.Groups)-1]
	n := uint64(len(g.Frames))
	if len(s.Groups) == 1 {
		n += s.FrameStart
	}
	return Position{Group: g.Sequence, Frame: n}
}

// Continues reports whether s, a v2 segment, holds the track's record
// that comes right after one that ended at prev (Last of its segment),
// by the span rule: it starts either in prev's group at the frame after
// prev's last, or at frame 0 of the next group, and its groups are
// consecutive and none empty. That is the span rule's record after
// prev's where the track has no hole: a reader that read the previous
// record needs the timeline's record only for a segment that does not
// continue (a hole in the track, or an object other than its record
// says).
func Continues(s Segment, prev Position) bool {
	if checkInside(s) != nil {
		return false
	}
	first := s.Groups[0].Sequence
	return first == prev.Group && s.FrameStart == prev.Frame && s.FrameStart > 0 ||
		first == prev.Group+1 && s.FrameStart == 0
}
