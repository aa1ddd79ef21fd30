package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/lite/litepub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// demoStream publishes one loop of the h264+aac demo in container kind and
// returns, per track, the group stream bytes a subscriber receives (every
// frame, as the publisher lays it out) with its frame count, and the
// catalog.
func demoStream(b *testing.B, kind catalog.ContainerKind) (map[string][]byte, map[string]int, *catalog.Catalog) {
	b.Helper()
	bc := model.NewBroadcast("bench")
	if err := demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20, Container: kind}); err != nil {
		b.Fatal(err)
	}
	cat := session.LatestCatalog(bc)
	streams, counts := map[string][]byte{}, map[string]int{}
	for _, r := range cat.Renditions() {
		tr, err := bc.Track(r.Name)
		if err != nil {
			b.Fatal(err)
		}
		enc := session.EncoderOf(bc, r.Name)
		last, _ := tr.LatestGroup()
		var buf []byte
		var prev int64
		for seq := uint64(0); seq <= last; seq++ {
			g := tr.Group(seq)
			if g == nil {
				continue
			}
			frames, _, _ := g.Frames(0)
			for _, f := range frames {
				o := enc.Object(f)
				buf = litepub.AppendFrame(buf, wire.Lite05, o, prev)
				prev = o.Track
				counts[r.Name]++
			}
		}
		streams[r.Name] = buf
	}
	return streams, counts, cat
}

// BenchmarkReceiveFrame measures what each frame costs between the group
// stream and the model frames, in the legacy container and in cmaf (the
// same demo media): reading the FRAME off the stream and decoding it with
// package hang. The
// mediacommon sub-benchmark demuxes the same cmaf frames with
// fmp4.Parts.Unmarshal instead, for the package doc of internal/format/cmaf.
// ns/op and allocs/op are per frame.
func BenchmarkReceiveFrame(b *testing.B) {
	for _, tc := range []struct {
		name string
		kind catalog.ContainerKind
	}{{"legacy", catalog.ContainerLegacy}, {"cmaf", catalog.ContainerCMAF}, {"cmaf-mediacommon", catalog.ContainerCMAF}} {
		b.Run(tc.name, func(b *testing.B) {
			streams, counts, cat := demoStream(b, tc.kind)
			type track struct {
				data   []byte
				frames int
				pack   hang.Track
			}
			var tracks []track
			total := 0
			for _, r := range cat.Renditions() {
				tk := track{data: streams[r.Name], frames: counts[r.Name]}
				var err error
				if tk.pack, err = hang.NewTrack(hang.Kind(tc.kind), r.Common().Container); err != nil {
					b.Fatal(err)
				}
				tracks = append(tracks, tk)
				total += tk.frames
			}
			var n int
			br := bytes.NewReader(nil)
			r := bufio.NewReader(br)
			b.ReportAllocs()
			b.ResetTimer()
			for frames := 0; frames < b.N; {
				for _, tk := range tracks {
					br.Reset(tk.data)
					r.Reset(br)
					fr := wire.FrameReader{R: r}
					dec := tk.pack.Decoder()
					for {
						payload, err := fr.Next()
						if err == io.EOF {
							break
						}
						if err != nil {
							b.Fatal(err)
						}
						if tc.name == "cmaf-mediacommon" {
							var ps fmp4.Parts
							if err := ps.Unmarshal(payload); err != nil {
								b.Fatal(err)
							}
							continue
						}
						if err := dec.Decode(hang.Object{Payload: payload, Timestamp: fr.Timestamp, Timescale: publishTimescale}); err != nil {
							b.Fatal(err)
						}
						for f, ok := dec.Next(); ok; f, ok = dec.Next() {
							n += len(f.Payload)
						}
					}
					dec.Close()
					frames += tk.frames
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(total), "frames/loop")
		})
	}
}
