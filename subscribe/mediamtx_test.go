package subscribe

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/model"
)

// mediamtxBroadcast is a broadcast as MediaMTX serves an RTMP stream of
// H.264 and AAC over moq-transport: the MSF-00 catalog on ".catalog"
// (tracks "0" and "1", no role, avc3 without a description), H.264 as
// length-prefixed units with the parameter sets in band. Published by a
// Strict server, its loc tracks go as MediaMTX sends them (package hang's
// Bare: the bare payload, the time in the object in the media clock).
type mediamtxBroadcast struct {
	b          *model.Broadcast
	h264, aac  *samples.Sample
	video, aud *model.Track
}

func newMediaMTXBroadcast(t *testing.T, name string) *mediamtxBroadcast {
	t.Helper()
	m := &mediamtxBroadcast{b: model.NewBroadcast(name), h264: mustSample(t, "h264"), aac: mustSample(t, "aac")}
	doc := fmt.Sprintf(`{"version":1,"tracks":[`+
		`{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":%d,"height":%d},`+
		`{"name":"1","packaging":"loc","isLive":true,"codec":"mp4a.40.2","samplerate":%d,"channels":%d,"initData":%q}]}`,
		m.h264.Width, m.h264.Height, m.aac.SampleRate, m.aac.Channels, base64.StdEncoding.EncodeToString(m.aac.Description))
	ct := m.b.CreateTrack(catalog.MSF00TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(doc)})
	g.Close(nil)
	m.video, m.aud = m.b.CreateTrack("0"), m.b.CreateTrack("1")
	m.video.SetKeepGroups(100000)
	m.aud.SetKeepGroups(100000)
	m.b.HandleRequests(func(string) (*model.Track, error) { return nil, model.ErrNotFound })
	return m
}

// fill publishes every frame of the samples (a group per keyframe) and
// ends the tracks.
func (m *mediamtxBroadcast) fill(t *testing.T) {
	t.Helper()
	ps, _, err := h26x.ParseAVCDecoderConfig(m.h264.Description)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		s  *samples.Sample
		tr *model.Track
	}{{m.h264, m.video}, {m.aac, m.aud}} {
		var g *model.Group
		for _, f := range x.s.Frames {
			if f.Keyframe || g == nil {
				if g != nil {
					g.Close(nil)
				}
				if g, err = x.tr.AppendGroup(); err != nil {
					t.Fatal(err)
				}
			}
			p := f.Payload
			if x.s == m.h264 && f.Keyframe {
				p = append(h26x.AppendAVCC(nil, ps.NALUs()), p...)
			}
			g.WriteFrame(model.Frame{Timestamp: f.Timestamp, Payload: p})
		}
		g.Close(nil)
		x.tr.Close(nil)
	}
}

// TestAMediaMTXLikeServerIsRecordedFrameByFrame: a Strict server publishing
// a broadcast as MediaMTX does is recorded over drafts 16-19 on raw QUIC
// and over WebTransport, naming the stream by the URL path, with its
// groups as published (GOPs) and as MediaMTX sends them (a group per
// frame). On drafts 16 and 17 the server speaks draft 18's messages, as
// MediaMTX does: the client learns it from the first session's close and
// speaks them too. Every frame arrives, at its published time (within the 90 kHz
// and 48 kHz clocks' resolution), with the published key flag, H.264 in
// Annex B with the NAL units published, AAC unchanged.
func TestAMediaMTXLikeServerIsRecordedFrameByFrame(t *testing.T) {
	for _, tc := range []struct {
		name, scheme, alpn string
		perFrame           bool
	}{
		{"quic-draft16", "moqt", "moqt-16", false}, {"quic-draft17", "moqt", "moqt-17", false},
		{"quic-draft18", "moqt", "moqt-18", false}, {"quic-draft19", "moqt", "moqt-19", false},
		{"webtransport-draft18", "https", "moqt-18", false}, {"webtransport-draft16", "https", "moqt-16", false},
		{"quic-draft19-group-per-frame", "moqt", "moqt-19", true},
		{"webtransport-draft17-group-per-frame", "https", "moqt-17", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			m := newMediaMTXBroadcast(t, "live/test")
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t),
				Publish: []*model.Broadcast{m.b}, Strict: true, GroupPerFrame: tc.perFrame})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			opts := Options{TLSFingerprint: pin, Logger: testLogger(t), alpns: []string{tc.alpn}}
			opts.Reconnect.Min = 20 * time.Millisecond
			client, err := Dial(ctx, fmt.Sprintf("%s://%s/live/test", tc.scheme, srv.Addr()), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			b := client.Broadcast("")
			w, err := catalog.Watch(b, catalog.WatchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			if _, err := w.Next(ctx); err != nil {
				t.Fatal(err)
			}
			var tracks []*model.Track
			for _, name := range []string{"0", "1"} {
				tr, err := b.Track(name)
				if err != nil {
					t.Fatal(err)
				}
				tr.SetKeepGroups(100000)
				tracks = append(tracks, tr)
			}
			waitFor(t, "the subscriptions", func() bool { return client.ietfSubscriptions() == 3 })
			m.fill(t)
			// Groups travel on parallel streams: read once the tracks
			// ended, to see them all in order.
			waitFor(t, "the end of the tracks", func() bool { return client.ietfSubscriptions() == 1 })
			for i, s := range []*samples.Sample{m.h264, m.aac} {
				evs, err := readEvents(ctx, tracks[i].Subscribe(time.Hour), func(evs []model.Event) bool { return frameCount(evs) >= len(s.Frames) })
				if err != nil {
					t.Fatal(err)
				}
				var frames []model.Frame
				var keys []bool
				for _, ev := range evs {
					if ev.Kind == model.EventFrame {
						frames = append(frames, ev.Frame)
						keys = append(keys, ev.Keyframe)
					}
				}
				if len(frames) != len(s.Frames) {
					t.Fatalf("%s: %d frames, published %d", s.Name, len(frames), len(s.Frames))
				}
				for j, f := range frames {
					want := s.Frames[j]
					if d := f.Timestamp - want.Timestamp; d < -21 || d > 21 {
						t.Fatalf("%s frame %d at %d µs, published at %d", s.Name, j, f.Timestamp, want.Timestamp)
					}
					if keys[j] != (want.Keyframe || s.Kind == "audio") {
						t.Fatalf("%s frame %d: keyframe %v, published %v", s.Name, j, keys[j], want.Keyframe)
					}
					if s.Kind == "audio" {
						if string(f.Payload) != string(want.Payload) {
							t.Fatalf("%s frame %d differs", s.Name, j)
						}
						continue
					}
					units, err := h26x.SplitAnnexB(f.Payload)
					if err != nil {
						t.Fatalf("video frame %d is not Annex B: %v", j, err)
					}
					if want.Keyframe {
						units = units[2:]
					}
					wantUnits, _ := h26x.SplitAVCC(want.Payload, 4)
					if fmt.Sprint(units) != fmt.Sprint(wantUnits) {
						t.Fatalf("video frame %d: NAL units differ", j)
					}
				}
			}
		})
	}
}
