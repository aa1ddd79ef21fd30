package hls_test

import (
	"fmt"
	"os"
	"slices"
	"testing"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// spanningCues is 12 s of H.264 and AAC (4 s segments: boundaries near 4
// and 8 s) and four cues: one inside the first segment, one from it over
// both boundaries into the third, one inside the second, one over the
// second boundary.
func spanningCues() ([]mediatest.Input, []webvtt.Cue) {
	v, a := looped("h264", 0, 3), looped("aac", 1, 3)
	origin := firstTimestamp(v, a)
	cues := []webvtt.Cue{
		{Start: 1_000_000, End: 2_000_000, Text: "inside the first segment"},
		{Start: 2_500_000, End: 9_500_000, Text: "over both boundaries"},
		{Start: 6_000_000, End: 7_000_000, Text: "inside the second segment"},
		{Start: 7_500_000, End: 11_500_000, Text: "over the second boundary"},
	}
	text := mediatest.Input{Track: mux.Track{ID: 2, Name: "subs", Kind: mux.Text, Codec: "wvtt", Language: "en", Label: "English"}}
	for _, c := range cues {
		text.Frames = append(text.Frames, mux.Frame{TrackID: 2, Timestamp: origin + c.Start, Duration: c.End - c.Start, Keyframe: true, Payload: c.AppendBlock(nil)})
	}
	return []mediatest.Input{v, a, text}, cues
}

// A cue that lasts over a segment boundary is in every segment it
// overlaps, unchanged (RFC 8216 3.5: a player that starts in the later
// segment shows it); ffmpeg reading the playlist keeps it once.
func TestACueOverASegmentBoundaryIsRepeatedInTheNextSegment(t *testing.T) {
	t.Parallel()
	ins, cues := spanningCues()
	st, _ := record(t, hls.Options{}, ins...)
	var segs []struct {
		N          int
		URI        string
		Start, Dur int64
		Disc       bool
	}
	for _, r := range readState(t, st).Renditions {
		if r.ID == "s0" {
			segs = r.Segments
		}
	}
	if len(segs) != 3 {
		t.Fatalf("%d subtitle segments, want 3 (12 s in 4 s segments): %+v", len(segs), segs)
	}
	for _, s := range segs {
		got, err := webvtt.Parse(must2(os.ReadFile(st.path(s.URI))))
		must(t, err)
		var want []webvtt.Cue
		for _, c := range cues {
			if c.Start < s.Start+s.Dur && c.End > s.Start {
				want = append(want, c)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s [%d, %d) µs holds %+v, want every cue that overlaps it: %+v", s.URI, s.Start, s.Start+s.Dur, got, want)
		}
		mediatest.CheckCues(t, got, want)
	}
	// ffmpeg's HLS reader drops the repeated copy (same times and text).
	mediatest.CheckCues(t, mediatest.Cues(t, st.path("s0.m3u8")), cues)
	mediatest.DecodeClean(t, st.path("index.m3u8"))
}

// hls.js, starting to play in the third segment, shows the cue that
// began in the first (it loads the subtitle segment it plays and the one
// before, not the first), and playing the package from the start to the
// end keeps each cue once.
func TestChromiumShowsACueFromAnEarlierSegmentWithHLSJS(t *testing.T) {
	ins, cues := spanningCues()
	st, _ := record(t, hls.Options{}, ins...)
	b := serve(t, st.dir)
	type result struct {
		At     float64  `json:"at"`
		Active []string `json:"active"`
		Cues   []struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
			Text  string  `json:"text"`
		} `json:"cues"`
		Errors []string `json:"errors"`
	}
	// play starts hls.js at start seconds, plays to until (the end: -1),
	// and returns the text track's active cues there and all its cues.
	play := func(start, until float64) result {
		var r result
		if err := b.Eval(fmt.Sprintf(`new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const hls = new Hls({renderTextTracksNatively: true, startPosition: %f});
  const out = {active: [], cues: [], errors: []};
  setTimeout(() => reject(new Error('timeout ' + JSON.stringify(out))), 60000);
  const until = %f;
  hls.on(Hls.Events.ERROR, (e, d) => { out.errors.push(d.details); if (d.fatal) reject(new Error('fatal ' + d.details)); });
  hls.on(Hls.Events.SUBTITLE_TRACKS_UPDATED, () => { hls.subtitleDisplay = true; hls.subtitleTrack = 0; });
  hls.on(Hls.Events.MANIFEST_PARSED, () => { v.playbackRate = until >= 0 ? 1 : 4; v.play(); });
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    const tt = Array.from(v.textTracks).filter(t => t.kind === 'subtitles' || t.kind === 'captions');
    if (tt.length > 0) {
      out.at = v.currentTime;
      out.active = Array.from(tt[0].cues || []).filter(c => c.startTime <= out.at && out.at < c.endTime).map(c => c.text);
      out.cues = Array.from(tt[0].cues || []).map(c => ({start: c.startTime, end: c.endTime, text: c.text}));
    }
    hls.destroy();
    resolve(out);
  };
  v.addEventListener('timeupdate', () => {
    if (until >= 0 && v.currentTime >= until) {
      const tt = Array.from(v.textTracks).filter(t => t.kind === 'subtitles' || t.kind === 'captions');
      // Wait for the cues of the playing time to be there (the subtitle
      // segments load beside the media), up to 1 s of media.
      const t = v.currentTime;
      const shown = tt.length > 0 && Array.from(tt[0].cues || []).some(c => c.startTime <= t && t < c.endTime && c.text !== %q);
      if (shown || t >= until + 1) finish();
    }
  });
  v.addEventListener('ended', finish);
  hls.loadSource('/pkg/index.m3u8');
  hls.attachMedia(v);
})`, start, until, cues[3].Text), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	// 8.2 s: the third segment, inside the cue that began at 2.5 s (it
	// ends at 9.5 s, after the 1 s of waiting).
	r := play(8.2, 8.3)
	t.Logf("hls.js from 8.2 s: at %.3f s showing %q; cues %+v, errors %v", r.At, r.Active, r.Cues, r.Errors)
	if !slices.Contains(r.Active, cues[1].Text) {
		t.Fatalf("hls.js started in the third segment shows %q at %.3f s, want %q", r.Active, r.At, cues[1].Text)
	}
	r = play(0, -1)
	var got []webvtt.Cue
	for _, c := range r.Cues {
		got = append(got, webvtt.Cue{Start: int64(c.Start*1e6 + 0.5), End: int64(c.End*1e6 + 0.5), Text: c.Text})
	}
	mediatest.CheckCues(t, got, cues)
}
