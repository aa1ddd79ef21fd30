package hls_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// The MPD lists each text rendition as an AdaptationSet of its own
// (contentType "text", text/vtt, its language and label, the subtitle
// role) over the same WebVTT segments as the HLS subtitle playlist.
func TestTheMPDListsTheSubtitlesOverTheSameSegments(t *testing.T) {
	t.Parallel()
	st, _ := record(t, hls.Options{}, withText()...)
	mpd, err := os.ReadFile(st.path("index.mpd"))
	must(t, err)
	text := string(mpd)
	for _, want := range []string{
		`contentType="text"`, `mimeType="text/vtt"`, `lang="en"`,
		`<Label>English</Label>`, `<Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle">`,
		`<Representation id="s0" bandwidth=`, `media="$RepresentationID$-$Number%05d$.vtt"`,
	} {
		if !strings.Contains(text, want) {
			t.Fatalf("the MPD lacks %s:\n%s", want, text)
		}
	}
	// ffmpeg reads the MPD over HTTP without an error. (From a local file
	// ffmpeg 5.1's DASH reader reads no byte range, refuses a segment
	// named .vtt, for safety, unless -allowed_extensions ALL, and reads
	// the cues of the first two subtitle segments only, a limit of its
	// DASH reader: its HLS reader reads every cue,
	// TestSubtitlesBecomeAWebVTTPlaylistCutWithTheMedia.)
	url := overHTTP(t, st, "index.mpd")
	mediatest.DecodeClean(t, url)
	probe := mediatest.Probe(t, url)
	var kinds []string
	for _, s := range probe.Streams {
		kinds = append(kinds, s.CodecType+"/"+s.CodecName)
	}
	if !slices.Contains(kinds, "subtitle/webvtt") {
		t.Errorf("ffprobe reads streams %v from the MPD, no WebVTT", kinds)
	}
}

// TestChromiumShowsTheSubtitlesWithDashJS plays the package's MPD in
// dash.js to its end (at normal speed: faster, dash.js falls behind with
// the subtitle segments) and reads back the text track it made: its
// language (and dash.js's label), and each published cue at its time
// (within 1 ms), once.
func TestChromiumShowsTheSubtitlesWithDashJS(t *testing.T) {
	st, _ := record(t, hls.Options{}, withText()...)
	b := serve(t, st.dir)
	var r struct {
		Ended  bool     `json:"ended"`
		Tracks []string `json:"tracks"`
		Labels []string `json:"labels"`
		Cues   []struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
			Text  string  `json:"text"`
		} `json:"cues"`
		Errors []string `json:"errors"`
		Played bool     `json:"played"`
		By     string   `json:"endedBy"`
	}
	if err := b.Eval(`new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const out = {ended: false, tracks: [], cues: [], errors: [], played: false};
  const state = () => { const b = []; for (let i = 0; i < v.buffered.length; i++) b.push([v.buffered.start(i), v.buffered.end(i)]); return {t: v.currentTime, paused: v.paused, ready: v.readyState, net: v.networkState, buffered: b, dur: v.duration}; };
  const fail = (msg) => { out.state = state(); reject(new Error(msg + ' ' + JSON.stringify(out))); };
  // Progress, not a wall-clock budget, decides: a loaded machine plays
  // slowly, a stalled player stops moving.
  let last = -1, still = 0;
  const watch = setInterval(() => {
    if (out.ended) { clearInterval(watch); return; }
    // Played to the end but no 'ended' event: dash.js can pause the
    // element right at the end of a static MPD (seen under load), and an
    // element paused at its end fires no 'ended'.
    if (v.ended || (v.paused && out.played && v.duration > 0 && v.duration - v.currentTime < 0.05)) { clearInterval(watch); end('position'); return; }
    if (v.currentTime !== last) { last = v.currentTime; still = 0; return; }
    if (++still >= 20) { clearInterval(watch); fail('no progress for 20 s'); }
  }, 1000);
  const p = dashjs.MediaPlayer().create();
  p.updateSettings({streaming: {text: {defaultEnabled: true}}});
  p.on(dashjs.MediaPlayer.events.ERROR, (e) => { out.errors.push(JSON.stringify(e.error)); fail('dash.js error ' + JSON.stringify(e.error)); });
  p.on(dashjs.MediaPlayer.events.TEXT_TRACKS_ADDED, () => { p.setTextTrack(0); });
  p.on(dashjs.MediaPlayer.events.STREAM_INITIALIZED, () => { v.playbackRate = 1; });
  v.addEventListener('playing', () => { out.played = true; });
  // dash.js starts playback itself (autoplay); a play() it lost to a
  // race is started here, and the rejection, if any, is reported.
  v.addEventListener('canplay', () => { if (v.paused && !out.played) v.play().catch(err => out.errors.push('play: ' + err)); });
  const end = (by) => {
    if (out.ended) return;
    out.ended = true;
    out.endedBy = by;
    const tt = Array.from(v.textTracks);
    out.tracks = tt.map(t => t.kind + '/' + t.language);
    out.labels = p.getTracksFor('text').flatMap(t => (t.labels || []).map(l => t.lang + '/' + l.text));
    const sub = tt.find(t => t.kind === 'subtitles' || t.kind === 'captions');
    if (sub) out.cues = Array.from(sub.cues || []).map(c => ({start: c.startTime, end: c.endTime, text: c.text}));
    resolve(out);
  };
  v.addEventListener('ended', () => end('event'));
  p.initialize(v, '/pkg/index.mpd', true);
})`, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("dash.js: ended %v, text tracks %q (labels %q), %d cues, errors %v, played %v, ended by %s", r.Ended, r.Tracks, r.Labels, len(r.Cues), r.Errors, r.Played, r.By)
	if !r.Ended || len(r.Tracks) != 1 || r.Tracks[0] != "subtitles/en" || len(r.Labels) != 1 || r.Labels[0] != "en/English" {
		t.Fatalf("dash.js: %+v", r)
	}
	var got []webvtt.Cue
	for _, c := range r.Cues {
		got = append(got, webvtt.Cue{Start: int64(c.Start*1e6 + 0.5), End: int64(c.End*1e6 + 0.5), Text: c.Text})
	}
	mediatest.CheckCues(t, got, mediatest.PublishedCues(2, 0))
}
