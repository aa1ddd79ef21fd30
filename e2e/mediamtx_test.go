package e2e

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
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// The MediaMTX profile: rows of the matrix for a server that behaves as
// MediaMTX does (subscribe.ServerOptions Strict and GroupPerFrame: no
// discovery, no optional SUBSCRIBE parameters or FETCH, draft 18's
// messages on drafts 16 and 17, each frame its own group; an MSF-00
// catalog on ".catalog" without roles, H.264 as avc3 length-prefixed NAL
// units without a description, LOC times in the media clocks). Its
// dimensions: the drafts MediaMTX speaks x transport x container. The
// role is always dial: MediaMTX is a server, it never dials a recorder to
// publish; and the path is live: without FETCH there is no backfill, and
// a resume is the other rows' concern.

// mediamtxDrafts are the drafts MediaMTX serves.
var mediamtxDrafts = []string{"moq-transport-16", "moq-transport-17", "moq-transport-18", "moq-transport-19"}

// mediamtxCase is one recording of the profile.
type mediamtxCase struct {
	draft, scheme, container string
	rebased                  bool
}

func (c mediamtxCase) String() string {
	return strings.Join([]string{"mediamtx", c.draft, c.scheme, c.container}, "_")
}

// mediamtxCases: every draft into every container over raw QUIC, and each
// draft over WebTransport into a container that turns with the draft.
func mediamtxCases() []mediamtxCase {
	var out []mediamtxCase
	for i, d := range mediamtxDrafts {
		for _, c := range containers {
			out = append(out, mediamtxCase{draft: d, scheme: "moqt", container: c.name, rebased: c.rebased})
		}
		c := containers[i%len(containers)]
		out = append(out, mediamtxCase{draft: d, scheme: "https", container: c.name, rebased: c.rebased})
	}
	return out
}

// mediamtxTrack is what the profile's server publishes on one track: the
// sample's frames (decode order) at their times, looped every period.
type mediamtxTrack struct {
	sample *samples.Sample
	period int64 // µs
}

// time returns the time of frame i of loop k.
func (m mediamtxTrack) time(k int64, i int) int64 { return m.sample.Frames[i].Timestamp + k*m.period }

// locate returns the loop and index of the frame published at pts (µs).
func (m mediamtxTrack) locate(pts int64) (loop int64, index int, ok bool) {
	k := int64(math.Floor(float64(pts) / float64(m.period)))
	for _, l := range []int64{k, k - 1, k + 1} {
		for i := range m.sample.Frames {
			if d := m.time(l, i) - pts; d >= -ptsTolerance && d <= ptsTolerance {
				return l, i, true
			}
		}
	}
	return 0, 0, false
}

// publishLikeMediaMTX publishes H.264 and AAC in real time from now on,
// as MediaMTX serves an RTMP stream, until ctx ends; tracks "0" (video)
// and "1" (audio).
func publishLikeMediaMTX(t *testing.T, ctx context.Context) (*model.Broadcast, map[string]mediamtxTrack) {
	t.Helper()
	h264, aac := samples.MustLoadSample("h264"), samples.MustLoadSample("aac")
	ps, _, err := h26x.ParseAVCDecoderConfig(h264.Description)
	if err != nil {
		t.Fatal(err)
	}
	b := model.NewBroadcast("live/test")
	doc := fmt.Sprintf(`{"version":1,"tracks":[`+
		`{"name":"0","packaging":"loc","isLive":true,"codec":"avc3.640028","width":%d,"height":%d},`+
		`{"name":"1","packaging":"loc","isLive":true,"codec":"mp4a.40.2","samplerate":%d,"channels":%d,"initData":%q}]}`,
		h264.Width, h264.Height, aac.SampleRate, aac.Channels, base64.StdEncoding.EncodeToString(aac.Description))
	ct := b.CreateTrack(catalog.MSF00TrackName)
	g, _ := ct.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(doc)})
	g.Close(nil)
	b.HandleRequests(func(string) (*model.Track, error) { return nil, model.ErrNotFound })
	tracks := map[string]mediamtxTrack{"video": {h264, h264.Duration()}, "audio": {aac, aac.Duration()}}
	start := time.Now()
	for name, kind := range map[string]string{"0": "video", "1": "audio"} {
		m := tracks[kind]
		tr := b.CreateTrack(name)
		go func() {
			var g *model.Group
			for k := int64(0); ctx.Err() == nil; k++ {
				for i, f := range m.sample.Frames {
					ts := m.time(k, i)
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Until(start.Add(time.Duration(ts) * time.Microsecond))):
					}
					if f.Keyframe || g == nil {
						if g != nil {
							g.Close(nil)
						}
						var err error // this goroutine's own: the two tracks publish at once
						if g, err = tr.AppendGroup(); err != nil {
							return
						}
					}
					p := f.Payload
					if kind == "video" && f.Keyframe {
						p = append(h26x.AppendAVCC(nil, ps.NALUs()), p...)
					}
					g.WriteFrame(model.Frame{Timestamp: ts, Payload: p})
				}
			}
		}()
	}
	return b, tracks
}

// TestTheMediaMTXProfileRecordsWhatWasPublished records ~2.5 s from a
// MediaMTX-like server in each case and checks the file: it decodes clean
// in ffmpeg; every packet is a published frame (pts within 1 ms) with the
// source's key flag (from the bitstream: the groups are single frames),
// each stream a run of consecutive frames starting at a keyframe, video
// and audio at their published times (so in sync) and both running to
// the end of the file.
func TestTheMediaMTXProfileRecordsWhatWasPublished(t *testing.T) {
	mediatest.RequireTools(t, "ffmpeg", "ffprobe")
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	b, want := publishLikeMediaMTX(t, ctx)
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert},
		Publish: []*model.Broadcast{b}, Strict: true, GroupPerFrame: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	for _, c := range mediamtxCases() {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			logs := &logBuffer{}
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("log:\n%s", logs.tail())
				}
			})
			file := filepath.Join(t.TempDir(), "rec."+c.container)
			recordMediaMTX(t, c, srv.Addr().String(), pin, file, logs)
			checkMediaMTX(t, c, file, want)
		})
	}
}

// recordMediaMTX records recordFor of the server at addr over c's draft
// and transport into file.
func recordMediaMTX(t *testing.T, c mediamtxCase, addr, pin, file string, logs *logBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := subscribe.Options{TLSFingerprint: pin, Versions: []string{c.draft}, Logger: log, ReleaseRead: true,
		Reconnect: subscribe.Backoff{Min: 20 * time.Millisecond, Max: 100 * time.Millisecond}}
	sess, err := subscribe.Dial(ctx, c.scheme+"://"+addr+"/live/test", opts)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer sess.Close()
	out, err := record.Files(file, record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Duration: recordFor, KeepTimestamps: true, Logger: log,
		Delay: 4 * time.Second, MaxDelay: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The URL path names the stream: the broadcast is the session's root.
	if err := rec.Record(ctx, record.SessionSource(sess), ""); err != nil {
		t.Fatalf("record: %v", err)
	}
	if fi := rec.Files(); len(fi) != 1 || fi[0].Frames == 0 {
		t.Fatalf("recorded %+v", fi)
	}
}

// checkMediaMTX checks the file of case c against what was published.
func checkMediaMTX(t *testing.T, c mediamtxCase, file string, want map[string]mediamtxTrack) {
	t.Helper()
	mediatest.DecodeClean(t, file)
	pr := mediatest.Probe(t, file)
	if len(pr.Streams) != 2 {
		t.Fatalf("%d streams, want video and audio", len(pr.Streams))
	}
	pts := map[string][]int64{}
	var keys []bool
	for _, st := range pr.Streams {
		if want[st.CodecType].sample == nil {
			t.Fatalf("stream %d: unexpected %s stream", st.Index, st.CodecType)
		}
		for i, pk := range pr.PacketsOf(st.Index) {
			s, err := strconv.ParseFloat(pk.PTSTime, 64)
			if err != nil {
				t.Fatalf("%s packet %d: pts_time %q", st.CodecType, i, pk.PTSTime)
			}
			pts[st.CodecType] = append(pts[st.CodecType], int64(math.Round(s*1e6)))
			if st.CodecType == "video" {
				keys = append(keys, strings.Contains(pk.Flags, "K"))
			}
		}
	}
	if len(pts["video"]) == 0 || len(pts["audio"]) == 0 {
		t.Fatalf("%d video and %d audio packets", len(pts["video"]), len(pts["audio"]))
	}
	d := mediamtxOffset(t, c, pts, want)
	first, last := map[string]float64{}, map[string]float64{}
	for kind, ts := range pts {
		m := want[kind]
		prev := int64(-1)
		for i, p := range ts {
			loop, idx, ok := m.locate(p + d)
			if !ok {
				t.Fatalf("%s packet %d at %.6f s: no published frame within %d µs", kind, i, float64(p)/1e6, ptsTolerance)
			}
			f := m.sample.Frames[idx]
			if kind == "video" && keys[i] != f.Keyframe {
				t.Errorf("video packet %d at %.6f s: key flag %v, published %v", i, float64(p)/1e6, keys[i], f.Keyframe)
			}
			if i == 0 && !f.Keyframe {
				t.Errorf("%s starts at frame %d, not a keyframe", kind, idx)
			}
			g := loop*int64(len(m.sample.Frames)) + int64(idx)
			if prev >= 0 && g != prev+1 {
				t.Errorf("%s packet %d at %.6f s is published frame %d, after frame %d: frames lost or repeated", kind, i, float64(p)/1e6, g, prev)
			}
			prev = g
			s := float64(p+d) / 1e6
			if i == 0 {
				first[kind] = s
			}
			last[kind] = max(last[kind], s)
		}
	}
	// Without FETCH the audio joins at its first group after the
	// subscription: within a GOP of the video's keyframe. Both run to the
	// end of the file.
	start, end := min(first["audio"], first["video"]), max(last["audio"], last["video"])
	if a, v := first["audio"], first["video"]; math.Abs(a-v) > gop+0.1 {
		t.Errorf("audio starts at %.3f s, video at %.3f s: more than a GOP apart", a, v)
	}
	if need := recordFor.Seconds() - 0.2 - gop; end-start < need {
		t.Errorf("%.2f s of media (%.3f to %.3f s); want %.2f s at least", end-start, start, end, need)
	}
	for k := range last {
		if last[k] < end-0.15 {
			t.Errorf("%s ends at %.3f s, the file at %.3f s", k, last[k], end)
		}
	}
}

// mediamtxOffset returns what to add to a packet's time (µs) to get the
// published frame's: 0 where the recording keeps the broadcast's times;
// for a container that starts at 0, the one that puts the first video
// packet on a published keyframe and every packet of both streams on a
// published frame (the audio's loop is longer than the video's, so one
// offset fits).
func mediamtxOffset(t *testing.T, c mediamtxCase, pts map[string][]int64, want map[string]mediamtxTrack) int64 {
	t.Helper()
	if !c.rebased {
		return 0
	}
	v, p0 := want["video"], pts["video"][0]
	fits := func(d int64) bool {
		for kind, ts := range pts {
			for _, p := range ts {
				if _, _, ok := want[kind].locate(p + d); !ok {
					return false
				}
			}
		}
		return true
	}
	// The recording began at most a minute after the publisher.
	for k := int64(0); k*v.period < 60_000_000; k++ {
		for i, f := range v.sample.Frames {
			if d := v.time(k, i) - p0; f.Keyframe && fits(d) {
				return d
			}
		}
	}
	t.Fatal("no offset puts the file's packets on published frames")
	return 0
}
