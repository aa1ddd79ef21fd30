package session

import (
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// Encoder makes the objects our publisher sends of a published track's
// frames: the payload package hang makes of a frame in the track's
// packaging (legacy, loc, cmaf, raw), and the frame's time in each clock a
// wire names. It is the publish side's one use of hang: Serve and
// ServeGroup hand a family's wire objects, never frames to package.
type Encoder struct {
	pk  hang.Track
	buf []byte
}

// Object is one published frame as a family's wire sends it.
type Object struct {
	// Payload is the packaged payload; valid until the Encoder's next
	// object.
	Payload []byte
	// Micros is the frame's time in microseconds (never negative), Track
	// in the track's timescale (Encoder.Timescale; moq-lite's FRAME
	// timestamps, not clamped), Clock in the catalog's clock of a Bare
	// track (microseconds for the others; never negative).
	Micros, Track, Clock int64
}

// EncoderOf returns the encoder of published track name of b (see
// Packaging).
func EncoderOf(b *model.Broadcast, name string) Encoder { return Encoder{pk: Packaging(b, name)} }

// Object returns f as an object.
func (e *Encoder) Object(f model.Frame) Object {
	e.buf = e.pk.AppendPayload(e.buf[:0], f)
	us := max(f.Timestamp, 0)
	return Object{Payload: e.buf, Micros: us, Track: e.pk.WireTimestamp(f.Timestamp), Clock: max(e.pk.ClockTime(us), 0)}
}

// Timescale is the timescale of the track's wire timestamps as a
// publisher sends them (Object.Track): the init's for cmaf, microseconds
// otherwise.
func (e *Encoder) Timescale() uint64 { return e.pk.Timescale() }

// Bare reports whether the track's objects go as MediaMTX sends loc on
// moq-transport: the bare codec payload, the time in the object's
// Timestamp extension (draft-03's id) in the catalog's clock
// (Object.Clock).
func (e *Encoder) Bare() bool { return e.pk.Bare() }
