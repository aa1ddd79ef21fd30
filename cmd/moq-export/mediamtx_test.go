package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/h26x"
	"github.com/moq-export/moq-export/internal/testmedia"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// publishLikeMediaMTX publishes H.264 and AAC in real time as MediaMTX
// serves an RTMP stream over moq-transport: the MSF-00 catalog on
// ".catalog" (tracks "0" and "1", no role, avc3 without a description),
// H.264 as 4-byte length-prefixed NAL units with the parameter sets in band
// at each keyframe, the samples looped, until ctx ends. A moq-export server
// sends its loc renditions bare, the time in the media clocks.
func publishLikeMediaMTX(t *testing.T, ctx context.Context, name string) *model.Broadcast {
	t.Helper()
	h264, aac := testmedia.MustLoadSample("h264"), testmedia.MustLoadSample("aac")
	ps, _, err := h26x.ParseAVCDecoderConfig(h264.Description)
	if err != nil {
		t.Fatal(err)
	}
	b := model.NewBroadcast(name)
	doc := fmt.Sprintf(`{"version":1,"tracks":[`+
		`{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":%d,"height":%d},`+
		`{"name":"1","packaging":"loc","isLive":true,"codec":"mp4a.40.2","samplerate":%d,"channels":%d,"initData":%q}]}`,
		h264.Width, h264.Height, aac.SampleRate, aac.Channels, base64.StdEncoding.EncodeToString(aac.Description))
	ct := b.CreateTrack(catalog.MSF00TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(doc)})
	g.Close(nil)
	b.HandleRequests(func(string) (*model.Track, error) { return nil, model.ErrNotFound })
	start := time.Now()
	for _, x := range []struct {
		s    *testmedia.Sample
		name string
	}{{h264, "0"}, {aac, "1"}} {
		tr := b.CreateTrack(x.name)
		go func() {
			var g *model.Group
			span := x.s.Frames[len(x.s.Frames)-1].Timestamp + 1_000_000/30
			for loop := int64(0); ctx.Err() == nil; loop++ {
				for _, f := range x.s.Frames {
					ts := f.Timestamp + loop*span
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(start.Add(time.Duration(ts) * time.Microsecond))):
					}
					if f.Keyframe || g == nil {
						if g != nil {
							g.Close(nil)
						}
						ng, err := tr.AppendGroup()
						if err != nil {
							return
						}
						g = ng
					}
					p := f.Payload
					if x.s == h264 && f.Keyframe {
						p = append(h26x.AppendAVCC(nil, ps.NALUs()), p...)
					}
					g.WriteFrame(model.Frame{Timestamp: ts, Payload: p})
				}
			}
		}()
	}
	return b
}

// TestAMediaMTXLikeServerIsRecordedIntoEveryContainer: a moq-export server
// behaving as MediaMTX does (Strict: no discovery, no optional SUBSCRIBE
// parameters, closing the session on unknown tracks; MSF-00 catalog, LOC in
// the media clocks, length-prefixed H.264 without a description) is
// recorded by the command from moqt://HOST:PORT/live/test over drafts
// 16-19 on raw QUIC and over WebTransport, into every container: each file
// decodes clean in ffmpeg with 2 s of 30 fps video, and AAC from its first
// group after the join (no FETCH: up to a GOP after the video) to the end. (The frame-by-frame comparison of the same media is
// subscribe's TestAMediaMTXLikeServerIsRecordedFrameByFrame and hang's
// TestMediaMTXMediaIsDecodedToWhatWasPublished.)
func TestAMediaMTXLikeServerIsRecordedIntoEveryContainer(t *testing.T) {
	needTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct{ draft, scheme, file string }{
		{"moq-transport-16", "moqt", "x.mkv"},
		{"moq-transport-17", "moqt", "x.ts"},
		{"moq-transport-18", "https", "x.mp4"},
		{"moq-transport-19", "moqt", "x.flv"},
	} {
		t.Run(tc.draft+"-"+tc.scheme+"-"+tc.file, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cert, pin, err := subscribe.SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bc := publishLikeMediaMTX(t, ctx, "live/test")
			srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert},
				Versions: []string{tc.draft}, Strict: true, Publish: []*model.Broadcast{bc},
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			url := tc.scheme + "://" + srv.Addr().String() + "/live/test"
			r := run(t, dir, url, "--tls-fingerprint", pin, "-v", "-o", tc.file, "--duration", "2s")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if strings.Contains(r.stderr, "timescale than assumed") || strings.Contains(r.stderr, "neither Annex B") {
				t.Errorf("warned about the media:\n%s", r.stderr)
			}
			if !strings.Contains(r.stderr, "without FETCH") {
				t.Errorf("the log does not say FETCH is not served:\n%s", r.stderr)
			}
			path := filepath.Join(dir, tc.file)
			decode(t, path)
			p := probe(t, path)
			defer func() {
				if t.Failed() {
					t.Log(r.stderr)
				}
			}()
			expectFrames(t, p, "h264", 2)
			// Without FETCH the audio starts at the first group after the
			// join, up to a GOP (1 s) after the video's keyframe; from
			// there it runs with the video to the end.
			lag := p.streamStart(t, "aac") - p.streamStart(t, "h264")
			if lag < -50*time.Millisecond || lag > 1100*time.Millisecond {
				t.Errorf("audio starts %v after the video", lag)
			}
			expectFrames(t, p, "aac", 2-lag.Seconds())
		})
	}
}
