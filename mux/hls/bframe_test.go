package hls_test

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"

	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// playFromStart is the JavaScript that plays a package with hls.js or
// dash.js (fmt.Sprintf it with "hls" or "dash", the manifest's URL and a
// time to seek to) and reports where its video starts, where a seek lands
// and where it ends: the media time of the first video frame Chromium
// presents (paused at 0, before it plays) and what is buffered then, the
// position and the presented frame after a seek made while paused, then
// the end after a seek 0.5 s before it.
const playFromStart = `new Promise((resolve, reject) => {
  const player = %q, url = %q, seekTo = %g;
  const v = document.getElementById('v');
  const out = {ended: false, duration: 0, first: -1, bufStart: -1, buffered: '', seekTime: -1, seekFrame: -1, time: -1, frames: 0, errors: []};
  const ranges = (b) => Array.from({length: b.length}, (_, i) => b.start(i).toFixed(3) + '-' + b.end(i).toFixed(3)).join(',');
  const fail = (msg) => { out.time = v.currentTime; out.buffered = ranges(v.buffered); reject(new Error(msg + ' ' + JSON.stringify(out))); };
  setTimeout(() => fail('timeout'), 60000);
  // 0: until the first frame; 1: playing to 1 s; 2: paused, seeking;
  // 3: seeked; 4: playing from 0.5 s before the end.
  let phase = 0;
  const onFrame = (now, md) => {
    if (phase === 0) {
      // The first frame, shown while paused at 0 (a frame presented while
      // playing can be skipped by the callback on a loaded machine).
      phase = 1; out.first = md.mediaTime;
      out.bufStart = v.buffered.length ? v.buffered.start(0) : -1; out.buffered = ranges(v.buffered);
      v.play().catch((err) => fail('play: ' + err));
    } else if (phase === 2 || phase === 3) {
      out.seekFrame = md.mediaTime;
    }
    v.requestVideoFrameCallback(onFrame);
  };
  v.requestVideoFrameCallback(onFrame);
  v.addEventListener('timeupdate', () => {
    if (phase === 1 && v.currentTime > 1) { phase = 2; v.pause(); v.currentTime = seekTo; }
  });
  v.addEventListener('seeked', () => {
    if (phase !== 2) return;
    phase = 3; out.seekTime = v.currentTime;
    // The frame the seek presents, while paused, then on to the end.
    setTimeout(() => {
      phase = 4; out.duration = v.duration;
      v.currentTime = Math.max(v.duration - 0.5, 0);
      v.play().catch((err) => fail('play: ' + err));
    }, 500);
  });
  const end = () => {
    if (out.ended) return;
    out.ended = true; out.time = v.currentTime; out.buffered = ranges(v.buffered);
    out.frames = v.getVideoPlaybackQuality().totalVideoFrames;
    resolve(out);
  };
  v.addEventListener('ended', end);
  if (player === 'hls') {
    const hls = new Hls();
    hls.on(Hls.Events.ERROR, (e, d) => { out.errors.push(d.details); if (d.fatal) fail('fatal hls.js error ' + d.details); });
    hls.loadSource(url);
    hls.attachMedia(v);
  } else {
    const p = dashjs.MediaPlayer().create();
    p.on(dashjs.MediaPlayer.events.ERROR, (e) => { out.errors.push(JSON.stringify(e.error)); fail('dash.js error'); });
    // dash.js can pause the element right at the end of a static MPD, and
    // an element paused at its end fires no 'ended'.
    setInterval(() => { if (phase === 4 && v.currentTime > v.duration - 0.45 && (v.ended || (v.paused && v.duration > 0 && v.duration - v.currentTime < 0.05))) end(); }, 250);
    p.initialize(v, url, false);
  }
})`

// fromStart is what playFromStart reports.
type fromStart struct {
	Ended     bool     `json:"ended"`
	Duration  float64  `json:"duration"`
	First     float64  `json:"first"`
	BufStart  float64  `json:"bufStart"`
	Buffered  string   `json:"buffered"`
	SeekTime  float64  `json:"seekTime"`
	SeekFrame float64  `json:"seekFrame"`
	Time      float64  `json:"time"`
	Frames    int      `json:"frames"`
	Errors    []string `json:"errors"`
}

// upTo returns the frames of in (decode order) presented before end (µs),
// and the keyframe at end when one is there: for H.264 with B-frames, a
// closed GOP's frames all come before the next keyframe in decode order.
func upTo(in mediatest.Input, end int64) mediatest.Input {
	out := mediatest.Input{Track: in.Track}
	for _, f := range in.Frames {
		if f.Timestamp < end || (f.Timestamp == end && f.Keyframe) {
			out.Frames = append(out.Frames, f)
		}
	}
	return out
}

// shortLastSegment is H.264 with B-frames (two frames reordered) and AAC,
// 8 s and the keyframe at 8 s, for 1 s segments: the last video segment is
// one frame.
func shortLastSegment() []mediatest.Input {
	const end = 8_000_000
	return []mediatest.Input{upTo(looped("h264", 0, 3), end), upTo(looped("aac", 1, 3), end+33_334)}
}

// TestFFmpegReadsBFrameVideoAtItsPublishedTimesFromThePlaylistsAndTheMPD
// records shortLastSegment's package and reads it with ffprobe: every
// packet of each media playlist, and of each stream of the MPD (over
// HTTP, as ffmpeg reads a DASH package), at its published time within
// 1 ms, the video's decode times from the package's 0.
func TestFFmpegReadsBFrameVideoAtItsPublishedTimesFromThePlaylistsAndTheMPD(t *testing.T) {
	t.Parallel()
	ins := shortLastSegment()
	st, _ := record(t, hls.Options{SegmentDuration: time.Second}, ins...)
	origin := firstTimestamp(ins...)
	for i, id := range []string{"v0", "a0"} {
		mediatest.DecodeClean(t, st.path(id+".m3u8"))
		checkPackets(t, st.path(id+".m3u8"), ins[i], origin)
	}
	mpd := overHTTP(t, st, "index.mpd")
	mediatest.DecodeClean(t, mpd)
	probe := mediatest.Probe(t, mpd)
	for i, in := range ins {
		// ffmpeg 5.1's DASH reader leaves the last frame of the AAC
		// rendition out (it did before the decode times started at 0).
		pk := probe.PacketsOf(i)
		if len(pk) != len(in.Frames) && (in.Track.Kind != mux.Audio || len(pk) != len(in.Frames)-1) {
			t.Fatalf("the MPD's stream %d: ffprobe reads %d packets, %d frames were written", i, len(pk), len(in.Frames))
		}
		for j, p := range pk {
			got, err := strconv.ParseFloat(p.PTSTime, 64)
			must(t, err)
			if want := float64(in.Frames[j].Timestamp-origin) / 1e6; math.Abs(got-want) > 0.001 {
				t.Fatalf("the MPD's stream %d, packet %d: pts %.6f s, frame at %.6f s", i, j, got, want)
			}
		}
	}
	if pk := mediatest.Probe(t, st.path("v0.m3u8")).Packets; pk[0].DTS == nil || *pk[0].DTS != 0 || *pk[0].PTS != 0 {
		t.Errorf("the first video packet: pts %v dts %v, want both 0 (no decode delay, no edit list)", pk[0].PTS, pk[0].DTS)
	}
}

// TestChromiumPlaysBFrameVideoFromItsFirstFrameToItsEndThoughItsLastSegmentIsOneFrame
// records H.264 with B-frames (two frames reordered) and AAC into 1 s
// segments, the last of them one video frame (8 s of media and the
// keyframe at 8 s), and plays the package in Chromium with hls.js and its
// MPD with dash.js: the first frame presented must be the first frame
// recorded (at 0, with what is buffered starting there), a seek into a
// group of pictures must present the frame at the time asked, and the
// player must reach the end. Video whose decode times start a decode
// delay after 0 and whose edit list takes the delay off again played a
// tenth of a second early in both (the players map the first decode time
// to 0, and Chromium applies the edit list too): its first group of
// pictures fell before 0 and was never shown, and a last segment shorter
// than the delay was never reached, so the player never ended.
func TestChromiumPlaysBFrameVideoFromItsFirstFrameToItsEndThoughItsLastSegmentIsOneFrame(t *testing.T) {
	const end = 8_000_000
	frame := 1e6 / 30.0
	ins := shortLastSegment()
	for _, layout := range []struct {
		name  string
		files bool
	}{{"byte ranges", false}, {"a file per segment", true}} {
		t.Run(layout.name, func(t *testing.T) {
			st := newStore(t)
			w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: time.Second, SegmentFiles: layout.files})
			mediatest.Feed(t, w, ins...)
			must(t, w.Close())
			if v0, err := os.ReadFile(st.path("v0.m3u8")); err != nil {
				t.Fatal(err)
			} else if !strings.Contains(string(v0), "#EXTINF:0.03333,") {
				t.Fatalf("the last video segment is not one frame:\n%s", v0)
			}
			b := serve(t, st.dir)
			for _, p := range []struct{ player, url string }{{"hls", "/pkg/index.m3u8"}, {"dash", "/pkg/index.mpd"}} {
				if err := b.Eval(freshVideo, new(bool)); err != nil {
					t.Fatal(err)
				}
				const seekTo = 5.5
				var r fromStart
				if err := b.Eval(fmt.Sprintf(playFromStart, p.player, p.url, seekTo), &r); err != nil {
					t.Errorf("%s: %v", p.player, err)
					continue
				}
				t.Logf("%s: %+v", p.player, r)
				if r.First > frame/2e6 || r.BufStart > 0.01 {
					t.Errorf("%s presented its first video frame at %.3f s with %s buffered: want the frame at 0 and the media buffered from 0", p.player, r.First, r.Buffered)
				}
				if math.Abs(r.SeekTime-seekTo) > 0.001 || math.Abs(r.SeekFrame-seekTo) > frame/1e6 {
					t.Errorf("%s, a seek to %.1f s: at %.3f s presenting the frame of %.3f s: want the frame at %.1f s", p.player, seekTo, r.SeekTime, r.SeekFrame, seekTo)
				}
				if want := float64(end)/1e6 + frame/1e6; !r.Ended || r.Time < want-0.01 || math.Abs(r.Duration-want) > 0.03 {
					t.Errorf("%s ended %v at %.3f s of %.3f: want the end of %.3f s", p.player, r.Ended, r.Time, r.Duration, want)
				}
			}
		})
	}
}
