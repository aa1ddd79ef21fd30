package subscribe

import (
	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/cmaf"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe/internal/container"
	"github.com/moq-export/moq-export/subscribe/internal/wire"
)

// packaging is how a published track goes on the wire: the container its
// model frames are put in and the TRACK_INFO timescale of the wire
// timestamps. The broadcast's own catalog decides: a rendition it declares
// "cmaf" carries moof+mdat payloads already (as `moq import fmp4`
// publishes them), which go out as they are at the init's mdhd timescale;
// "loc" renditions get the loc container; every other track the legacy
// one, and catalog tracks none.
type packaging struct {
	kind      string // container.Legacy, container.LOC, container.CMAF or kindRaw
	timescale uint64
}

// packagingOf reads the catalog that b publishes (catalog.json, if it
// holds one) for track name.
func packagingOf(b *model.Broadcast, name string) packaging {
	p := packaging{kind: container.Legacy, timescale: publishTimescale}
	if isCatalogTrack(name) {
		p.kind = kindRaw
		return p
	}
	c := latestCatalog(b)
	if c == nil {
		return p
	}
	for _, r := range c.Renditions() {
		if r.Name != name {
			continue
		}
		cm := r.Common()
		switch cm.ContainerKind() {
		case catalog.ContainerLOC:
			p.kind = container.LOC
		case catalog.ContainerCMAF:
			if init, err := cm.Container.DecodeInit(); err == nil {
				if in, err := cmaf.ParseInit(init); err == nil {
					p.kind, p.timescale = container.CMAF, uint64(in.Timescale)
				}
			}
		}
	}
	return p
}

// latestCatalog returns the newest catalog.json snapshot b holds, or nil.
func latestCatalog(b *model.Broadcast) *catalog.Catalog {
	held := false
	for _, n := range b.TrackNames() {
		held = held || n == catalog.TrackName
	}
	if !held {
		return nil // Track would create it
	}
	t, err := b.Track(catalog.TrackName)
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
	c, err := catalog.Parse(frames[0].Payload)
	if err != nil {
		return nil
	}
	return c
}

// appendFrame appends one FRAME (on a group or a fetch stream) laid out
// for v: the timestamp, converted to the track's timescale, as a delta
// from the previous frame's (both microseconds) where v has frame
// timestamps, and the payload in the container.
func (p packaging) appendFrame(b []byte, v *wire.Version, ts, last int64, payload []byte) []byte {
	switch p.kind {
	case kindRaw:
		return wire.AppendFrameFor(b, v, ts-last, payload)
	case container.CMAF:
		return wire.AppendFrameFor(b, v, toTimescale(ts, p.timescale)-toTimescale(last, p.timescale), payload)
	case container.LOC:
		return wire.AppendFrameFor(b, v, ts-last, container.AppendLOC(nil, ts, payload))
	}
	if v.FrameTimestamps {
		b = wire.AppendVarint(b, wire.Zigzag(ts-last))
	}
	b = wire.AppendVarint(b, uint64(container.LegacyLen(ts, payload)))
	return container.AppendLegacy(b, ts, payload)
}

// toTimescale converts microseconds to ticks of timescale (rounding
// down); the subscriber reads CMAF times from the fragment, so the wire
// timestamp is informative.
func toTimescale(us int64, timescale uint64) int64 {
	if timescale == publishTimescale || timescale == 0 {
		return us
	}
	return us/1_000_000*int64(timescale) + us%1_000_000*int64(timescale)/1_000_000
}
