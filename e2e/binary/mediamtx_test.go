package binary

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/internal/codec/h26x"
	"github.com/moq-export/moq-export/internal/samples"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
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
	h264, aac := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
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
		s    *samples.Sample
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
// 16-19 on raw QUIC and over WebTransport, into every container, with its
// groups as GOPs and as MediaMTX sends them (a group per frame): each file
// decodes clean in ffmpeg with 30 fps video from its first keyframe and
// AAC from its first group after the join to the end, 2 s in all, and the
// video's key flags are the sample's (one a second). (The frame-by-frame comparison of the same media is
// subscribe's TestAMediaMTXLikeServerIsRecordedFrameByFrame and hang's
// TestMediaMTXMediaIsDecodedToWhatWasPublished.)
func TestAMediaMTXLikeServerIsRecordedIntoEveryContainer(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	for _, tc := range []struct {
		draft, scheme, file string
		perFrame            bool
	}{
		{"moq-transport-16", "moqt", "x.mkv", false},
		{"moq-transport-17", "moqt", "x.ts", false},
		{"moq-transport-18", "https", "x.mp4", false},
		{"moq-transport-19", "moqt", "x.flv", false},
		{"moq-transport-16", "https", "x.mp4", true},
		{"moq-transport-17", "moqt", "x.mkv", true},
		{"moq-transport-19", "https", "x.ts", true},
		{"moq-transport-18", "moqt", "x.flv", true},
	} {
		name := tc.draft + "-" + tc.scheme + "-" + tc.file
		if tc.perFrame {
			name += "-group-per-frame"
		}
		t.Run(name, func(t *testing.T) {
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
				Versions: []string{tc.draft}, Strict: true, GroupPerFrame: tc.perFrame, Publish: []*model.Broadcast{bc},
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			url := tc.scheme + "://" + srv.Addr().String() + "/live/test"
			args := []string{url, "--tls-fingerprint", pin, "-v", "-o", tc.file, "--duration", "2s"}
			if tc.perFrame {
				// Each frame is a stream of its own: a loaded machine that
				// delays one past --delay costs the video up to a GOP,
				// which is not what this test is about.
				args = append(args, "--delay", "4s", "--max-delay", "8s")
			}
			r := cmdtest.Run(t, dir, args...)
			if r.Code != 0 {
				t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
			}
			if strings.Contains(r.Stderr, "timescale than assumed") || strings.Contains(r.Stderr, "neither Annex B") {
				t.Errorf("warned about the media:\n%s", r.Stderr)
			}
			if !strings.Contains(r.Stderr, "without FETCH") {
				t.Errorf("the log does not say FETCH is not served:\n%s", r.Stderr)
			}
			path := filepath.Join(dir, tc.file)
			cmdtest.Decode(t, path)
			p := cmdtest.Probe(t, path)
			defer func() {
				if t.Failed() {
					t.Log(r.Stderr)
				}
			}()
			// Without FETCH the audio starts at the first group after the
			// join, up to a GOP (1 s) after the video's keyframe; from
			// there it runs with the video to the end. With a group per
			// frame the video joins at its next keyframe instead (as a
			// MediaMTX reader does), up to a GOP after the audio.
			lag := p.StreamStart(t, "aac") - p.StreamStart(t, "h264")
			lo, hi := -50*time.Millisecond, 1100*time.Millisecond
			if tc.perFrame {
				lo, hi = -1100*time.Millisecond, 100*time.Millisecond
			}
			if lag < lo || lag > hi {
				t.Errorf("audio starts %v after the video", lag)
			}
			cmdtest.ExpectFrames(t, p, "h264", 2-max(-lag.Seconds(), 0))
			cmdtest.ExpectFrames(t, p, "aac", 2-max(lag.Seconds(), 0))
			expectKeysOfTheSample(t, path)
		})
	}
}

// expectKeysOfTheSample checks the key flags of the video in path against
// the h264 sample's, whose keyframes are 1 s apart: the first packet is a
// keyframe, and the keys are exactly the packets at whole seconds from it
// (a server that sends each frame as its own group makes each group's
// first frame look like a keyframe; the flags must come from the
// bitstream).
func expectKeysOfTheSample(t *testing.T, path string) {
	t.Helper()
	pr := mediatest.Probe(t, path, "-select_streams", "v:0")
	if len(pr.Packets) == 0 {
		t.Fatal("no video packets")
	}
	var t0 float64
	keys := 0
	for i, pk := range pr.Packets {
		pts, err := strconv.ParseFloat(pk.PTSTime, 64)
		if err != nil {
			t.Fatalf("video packet %d: pts_time %q", i, pk.PTSTime)
		}
		key := strings.Contains(pk.Flags, "K")
		if i == 0 {
			if !key {
				t.Fatalf("the video starts at a packet that is no keyframe (%q)", pk.Flags)
			}
			t0 = pts
		}
		_, frac := math.Modf(pts - t0 + 0.5)
		if onSecond := math.Abs(frac-0.5) < 0.002; key != onSecond {
			t.Errorf("video packet %d at %.3f s (%.3f s after the first): key flag %v", i, pts, pts-t0, key)
		}
		if key {
			keys++
		}
	}
	if keys < 2 || keys > 3 {
		t.Errorf("%d keyframes in %d video packets of 2 s, the sample has one a second", keys, len(pr.Packets))
	}
}
