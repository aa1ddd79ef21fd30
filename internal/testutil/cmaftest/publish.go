package cmaftest

import (
	"encoding/base64"
	"fmt"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/format/cmaf"
	"github.com/moq-export/moq-export/model"
)

// Track is one rendition to publish: a track of a split file.
type Track struct {
	Name string // e.g. "0.m4s"
	File *File
	ID   uint32 // the track id in File
}

// Publisher fills a model broadcast the way `moq import fmp4` does: a
// catalog.json whose renditions are cmaf with the init in the catalog and
// no description (so the init's sample entry must supply it), and per
// track one moq frame per single-track moof+mdat, the frame timestamp
// being the fragment's first presentation time. The importer opens a group
// at every fragment flagged as holding a sync sample; ffmpeg's
// frag_every_frame flags P-frames too (see the field notes), so the
// publisher opens one at every fragment that does not go back in
// presentation time: each I- and P-frame opens a group and the B-frames
// join the one before. Audio opens a group per fragment.
type Publisher struct {
	B      *model.Broadcast
	tracks []*pubTrack
}

type pubTrack struct {
	t     *model.Track
	frags [][]byte
	ts    []int64
	opens []bool // the fragment opens a group
	next  int
	group *model.Group
}

// NewPublisher builds the broadcast and its catalog; no media yet.
func NewPublisher(name string, tracks ...Track) (*Publisher, error) {
	p := &Publisher{B: model.NewBroadcast(name)}
	cat := &catalog.Catalog{}
	for _, tr := range tracks {
		init := tr.File.Inits[tr.ID]
		in, err := cmaf.ParseInit(init)
		if err != nil {
			return nil, err
		}
		common := catalog.Common{Codec: CodecString(in), Container: &catalog.Container{Kind: catalog.ContainerCMAF, Init: base64.StdEncoding.EncodeToString(init)}}
		if in.Video {
			if cat.Video.Renditions == nil {
				cat.Video.Renditions = map[string]catalog.VideoConfig{}
			}
			cat.Video.Renditions[tr.Name] = catalog.VideoConfig{Common: common}
		} else {
			if cat.Audio.Renditions == nil {
				cat.Audio.Renditions = map[string]catalog.AudioConfig{}
			}
			cat.Audio.Renditions[tr.Name] = catalog.AudioConfig{Common: common, SampleRate: uint32(in.SampleRate), NumberOfChannels: uint32(in.Channels)}
		}
		pt := &pubTrack{t: p.B.CreateTrack(tr.Name)}
		pt.t.SetKeepGroups(1 << 20)
		d := cmaf.NewDemuxer(in)
		var newest int64
		for _, f := range tr.File.Fragments {
			if f.TrackID != tr.ID {
				continue
			}
			ss, err := d.Fragment(f.Data)
			if err != nil {
				return nil, fmt.Errorf("track %s: %w", tr.Name, err)
			}
			first, last := ss[0].Timestamp, ss[0].Timestamp
			for _, s := range ss {
				first, last = min(first, s.Timestamp), max(last, s.Timestamp)
			}
			opens := !in.Video || len(pt.ts) == 0 || first > newest
			if len(pt.ts) == 0 || last > newest {
				newest = last
			}
			pt.frags, pt.ts, pt.opens = append(pt.frags, f.Data), append(pt.ts, first), append(pt.opens, opens)
		}
		p.tracks = append(p.tracks, pt)
	}
	data, err := cat.Marshal()
	if err != nil {
		return nil, err
	}
	ct := p.B.CreateTrack(catalog.TrackName)
	g, err := ct.AppendGroup()
	if err != nil {
		return nil, err
	}
	if err := g.WriteFrame(model.Frame{Payload: data}); err != nil {
		return nil, err
	}
	g.Close(nil)
	return p, nil
}

// Write publishes the next n fragments of every track (all of them when
// n < 0).
func (p *Publisher) Write(n int) error {
	for _, pt := range p.tracks {
		for k := 0; (n < 0 || k < n) && pt.next < len(pt.frags); k++ {
			if pt.opens[pt.next] || pt.group == nil {
				if pt.group != nil {
					pt.group.Close(nil)
				}
				g, err := pt.t.AppendGroup()
				if err != nil {
					return err
				}
				pt.group = g
			}
			if err := pt.group.WriteFrame(model.Frame{Timestamp: pt.ts[pt.next], Payload: pt.frags[pt.next]}); err != nil {
				return err
			}
			pt.next++
		}
	}
	return nil
}

// End ends every track, the catalog's too: subscribers get every group
// sent, then the end of the subscription. The broadcast stays announced
// (an "ended" announcement would cut the groups still in flight): close it
// when the subscribers are done.
func (p *Publisher) End() {
	for _, pt := range p.tracks {
		if pt.group != nil {
			pt.group.Close(nil)
		}
		pt.t.Close(nil)
	}
	if ct, err := p.B.Track(catalog.TrackName); err == nil {
		ct.Close(nil)
	}
}

// CodecString is the WebCodecs codec string the reference importer would
// put in the catalog for in (near enough for the muxers, which read the
// codec records).
func CodecString(in *cmaf.Init) string {
	d := in.Description
	switch in.Family {
	case "h264":
		if len(d) >= 4 {
			return fmt.Sprintf("avc1.%02x%02x%02x", d[1], d[2], d[3])
		}
		return "avc1"
	case "h265":
		return "hvc1.1.6.L93.B0"
	case "av1":
		return "av01.0.04M.08"
	case "vp9":
		return "vp09.00.10.08"
	case "vp8":
		return "vp8"
	case "aac":
		return "mp4a.40.2"
	}
	return in.Family
}
