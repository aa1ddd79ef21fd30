package subscribe

import (
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/varint"
	"github.com/moq-export/moq-export/model"
)

// packagingOf returns how published track name of b goes on the wire, as
// package hang reads it from the catalog b publishes (catalog.json, if it
// holds one): a rendition it declares "cmaf" carries moof+mdat payloads
// already (as `moq import fmp4` publishes them), which go out as they are
// at the init's mdhd timescale; "loc" renditions get the loc packaging;
// every other track the legacy one, and catalog tracks none.
func packagingOf(b *model.Broadcast, name string) hang.Track {
	if isCatalogTrack(name) {
		t, _ := hang.NewTrack(hang.Raw, nil)
		return t
	}
	return hang.ForRendition(latestCatalog(b), name)
}

// latestCatalog returns the newest snapshot of the catalog b holds (the
// first of catalog.TracksFor its name it has), or nil.
func latestCatalog(b *model.Broadcast) *catalog.Catalog {
	held := ""
	names := b.TrackNames()
	for _, want := range catalog.TracksFor(b.Name()) {
		for _, n := range names {
			if n == want && held == "" {
				held = n
			}
		}
	}
	if held == "" {
		return nil // Track would create it
	}
	t, err := b.Track(held)
	if err != nil {
		return nil
	}
	seq, ok := t.LatestGroup()
	if !ok {
		return nil
	}
	g := t.Group(seq)
	if g == nil {
		return nil
	}
	frames, _, _ := g.Frames(0)
	if len(frames) == 0 {
		return nil
	}
	c, err := catalog.NewReader(held).Frame(seq, true, frames[0].Payload)
	if err != nil {
		return nil
	}
	return c
}

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
