package subscribe

import (
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// packagingOf returns how published track name of b goes on the wire
// (session.Packaging).
func packagingOf(b *model.Broadcast, name string) hang.Track { return session.Packaging(b, name) }

// appendFrame appends one FRAME of f (on a group or a fetch stream) laid
// out for v: the timestamp, in the track's timescale, as a delta from the
// previous frame's (last, microseconds) where v has frame timestamps, and
// the payload package hang makes of f.
func appendFrame(b []byte, v *wire.Version, pk hang.Track, f model.Frame, last int64) []byte {
	if v.FrameTimestamps {
		b = varint.Append(b, wire.Zigzag(pk.WireTimestamp(f.Timestamp)-pk.WireTimestamp(last)))
	}
	b = varint.Append(b, uint64(pk.PayloadLen(f)))
	return pk.AppendPayload(b, f)
}
