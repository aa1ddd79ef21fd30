package export_test

import (
	"fmt"
	"testing"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux"
)

// benchExport returns an export into a Discard muxer of a broadcast with n
// audio renditions and its catalog, plus a producer per track.
func benchExport(b *testing.B, n int) (*export.Export, *mux.Discard, []*producer) {
	bc, tracks := benchBroadcast(b, n)
	d := &mux.Discard{}
	prods := make([]*producer, n)
	for i, t := range tracks {
		prods[i] = &producer{track: t}
	}
	return export.New(bc, d, export.Options{}), d, prods
}

// benchBroadcast returns a broadcast with n audio renditions and its
// catalog, plus the producer side of each track.
func benchBroadcast(b *testing.B, n int) (*model.Broadcast, []*model.Track) {
	bc := model.NewBroadcast("bench")
	cat := &catalog.Catalog{Audio: catalog.AudioSection{Renditions: map[string]catalog.AudioConfig{}}}
	tracks := make([]*model.Track, n)
	for i := range n {
		name := fmt.Sprintf("a%03d", i)
		cat.Audio.Renditions[name] = catalog.AudioConfig{Common: catalog.Common{Codec: "opus"}, SampleRate: 48000, NumberOfChannels: 2}
		tracks[i] = bc.CreateTrack(name)
	}
	data, err := cat.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	g, _ := bc.CreateTrack(catalog.TrackName).AppendGroup()
	g.WriteFrame(model.Frame{Payload: data})
	return bc, tracks
}

// producer writes one frame per round to a track, in groups of 32 frames
// (a one-second GOP at 30 fps, roughly).
type producer struct {
	track *model.Track
	group *model.Group
	n     int
}

func (p *producer) write(ts int64, payload []byte) {
	if p.n%32 == 0 {
		if p.group != nil {
			p.group.Close(nil)
		}
		p.group, _ = p.track.AppendGroup()
	}
	p.n++
	p.group.WriteFrame(model.Frame{Timestamp: ts, Payload: payload})
}

var trackCounts = []int{1, 4, 16, 256}

// BenchmarkExportIdle polls an export that was drained and that nothing
// woke since: the cost must not depend on the number of tracks.
func BenchmarkExportIdle(b *testing.B) {
	for _, n := range trackCounts {
		b.Run(fmt.Sprintf("tracks=%d", n), func(b *testing.B) {
			e, _, prods := benchExport(b, n)
			payload := make([]byte, 100)
			for _, p := range prods {
				p.write(0, payload)
			}
			if err := e.Poll(); err != nil {
				b.Fatal(err)
			}
			if err := e.Poll(); err != nil {
				b.Fatal(err)
			}
			if st := e.Stats(); st.Frames != int64(n) || st.Tracks != n {
				b.Fatalf("not drained: %+v", st)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := e.Poll(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExportActive writes one frame to every track per round, then
// drains the export; ns/op and allocs/op are per round (n frames).
func BenchmarkExportActive(b *testing.B) {
	for _, n := range trackCounts {
		b.Run(fmt.Sprintf("tracks=%d", n), func(b *testing.B) {
			e, d, prods := benchExport(b, n)
			payload := make([]byte, 100)
			ts := int64(0)
			round := func() {
				for _, p := range prods {
					p.write(ts, payload)
				}
				ts += 20_000
				if err := e.Poll(); err != nil {
					b.Fatal(err)
				}
			}
			round() // subscribe and write the header
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				round()
			}
			b.StopTimer()
			if got := d.Stats().Frames; got != int64(n)*(int64(b.N)+1) {
				b.Fatalf("%d frames written, want %d", got, int64(n)*(int64(b.N)+1))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/frame")
		})
	}
}

// BenchmarkExportSparse writes one frame per round to one track out of n
// (the others stay silent, as idle renditions do), then drains: the cost
// must follow the frame that arrived, not the n tracks watched.
func BenchmarkExportSparse(b *testing.B) {
	for _, n := range trackCounts {
		b.Run(fmt.Sprintf("tracks=%d", n), func(b *testing.B) {
			e, d, prods := benchExport(b, n)
			payload := make([]byte, 100)
			ts := int64(0)
			// Every track speaks once, then only track 0 goes on: the
			// others are declared idle after the delay.
			for _, p := range prods {
				p.write(ts, payload)
			}
			for range 50 {
				ts += 20_000
				prods[0].write(ts, payload)
				if err := e.Poll(); err != nil {
					b.Fatal(err)
				}
			}
			before := d.Stats().Frames
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				ts += 20_000
				prods[0].write(ts, payload)
				if err := e.Poll(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if got := d.Stats().Frames - before; got < int64(b.N)-1 {
				b.Fatalf("%d frames written in %d rounds", got, b.N)
			}
		})
	}
}
