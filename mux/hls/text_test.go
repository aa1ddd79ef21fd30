package hls_test

import (
	"os"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/format/webvtt"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// withText is 12 s of H.264 and AAC and 10 s of WebVTT cues.
func withText() []mediatest.Input {
	return []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3), mediatest.TextInput(2, 2)}
}

func TestSubtitlesBecomeAWebVTTPlaylistCutWithTheMedia(t *testing.T) {
	t.Parallel()
	st, w := record(t, hls.Options{}, withText()...)
	if len(st.early) > 0 {
		t.Fatalf("playlists named files before they were written: %v", st.early)
	}
	mv, err := os.ReadFile(st.path("index.m3u8"))
	must(t, err)
	for _, want := range []string{`#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="subs",LANGUAGE="en",NAME="English",AUTOSELECT=YES,DEFAULT=YES,URI="s0.m3u8"`, `SUBTITLES="subs"`} {
		if !strings.Contains(string(mv), want) {
			t.Fatalf("the multivariant playlist lacks %s:\n%s", want, mv)
		}
	}
	if strings.Contains(string(mv), "wvtt") {
		t.Errorf("CODECS names wvtt, which MSE players test and refuse:\n%s", mv)
	}
	s := readState(t, st)
	var video, text []int64
	for _, r := range s.Renditions {
		for _, seg := range r.Segments {
			switch r.Kind {
			case "video":
				video = append(video, seg.Start, seg.Dur)
			case "text":
				text = append(text, seg.Start, seg.Dur)
			}
		}
	}
	if len(text) == 0 || len(text) != len(video) {
		t.Fatalf("text segments (start, duration) %v, video's %v: want one per video segment", text, video)
	}
	// The same boundaries; the last text segment runs to the end of the
	// media (the audio may end after the video).
	for i := range text[:len(text)-1] {
		if d := text[i] - video[i]; d > 1000 || d < -1000 {
			t.Fatalf("text segments %v do not cover the video's %v", text, video)
		}
	}
	if n := len(text); text[n-2]+text[n-1] < video[n-2]+video[n-1] {
		t.Fatalf("the subtitles end at %d, before the video (%d)", text[n-2]+text[n-1], video[n-2]+video[n-1])
	}
	// Every cue is in the playlist at its time, once.
	mediatest.CheckCues(t, mediatest.Cues(t, st.path("s0.m3u8")), mediatest.PublishedCues(2, 0))
	seg, err := os.ReadFile(st.path("s0-00001.vtt"))
	must(t, err)
	// The video's decode times start at the package's time 0, its first
	// presentation time, B-frames or not: so do the cues.
	if !strings.HasPrefix(string(seg), "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n") {
		t.Errorf("segment header %q", seg[:min(len(seg), 60)])
	}
	if c := w.Counters(); c.Frames != int64(len(mediatest.Interleave(withText()...))) {
		t.Errorf("%d frames counted, %d written", c.Frames, len(mediatest.Interleave(withText()...)))
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
}

func TestAnEmptyStretchStillGetsItsSubtitleSegment(t *testing.T) {
	t.Parallel()
	// One cue at 1 s: the segments after it hold none, and are there.
	text := mediatest.TextInput(2, 1)
	text.Frames = text.Frames[1:2]
	st, _ := record(t, hls.Options{SegmentDuration: 2e9}, looped("h264", 0, 3), looped("aac", 1, 3), text)
	s := readState(t, st)
	var nv, nt int
	for _, r := range s.Renditions {
		switch r.Kind {
		case "video":
			nv = len(r.Segments)
		case "text":
			nt = len(r.Segments)
		}
	}
	if nv < 4 || nt != nv {
		t.Fatalf("%d text segments for %d video segments", nt, nv)
	}
	cues, err := webvtt.Parse(must2(os.ReadFile(st.path("s0-00002.vtt"))))
	if err != nil || len(cues) != 0 {
		t.Fatalf("segment 2: %v cues, %v", cues, err)
	}
}

func must2(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestChromiumShowsTheSubtitlesWithHLSJS plays a package with a WebVTT
// rendition in hls.js to its end and reads back the cues of the text track
// it made: each published cue at its time, with its text.
func TestChromiumShowsTheSubtitlesWithHLSJS(t *testing.T) {
	st, _ := record(t, hls.Options{}, withText()...)
	b := serve(t, st.dir)
	var r struct {
		Ended  bool   `json:"ended"`
		Tracks int    `json:"tracks"`
		Label  string `json:"label"`
		Lang   string `json:"lang"`
		Cues   []struct {
			Start float64 `json:"start"`
			End   float64 `json:"end"`
			Text  string  `json:"text"`
		} `json:"cues"`
		Errors []string `json:"errors"`
	}
	if err := b.Eval(`new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const hls = new Hls({renderTextTracksNatively: true});
  const out = {ended: false, tracks: 0, cues: [], errors: []};
  setTimeout(() => reject(new Error('timeout ' + JSON.stringify(out))), 60000);
  hls.on(Hls.Events.ERROR, (e, d) => { out.errors.push(d.details); if (d.fatal) reject(new Error('fatal ' + d.details)); });
  hls.on(Hls.Events.SUBTITLE_FRAG_PROCESSED, (e, d) => { if (!d.success) out.errors.push('subtitle fragment ' + d.frag.sn + ' failed'); });
  hls.on(Hls.Events.SUBTITLE_TRACKS_UPDATED, () => { hls.subtitleDisplay = true; hls.subtitleTrack = 0; });
  hls.on(Hls.Events.MANIFEST_PARSED, () => { v.playbackRate = 4; v.play(); });
  v.addEventListener('ended', () => {
    out.ended = true;
    const tt = Array.from(v.textTracks).filter(t => t.kind === 'subtitles' || t.kind === 'captions');
    out.tracks = tt.length;
    if (tt.length > 0) {
      out.label = tt[0].label; out.lang = tt[0].language;
      out.cues = Array.from(tt[0].cues || []).map(c => ({start: c.startTime, end: c.endTime, text: c.text}));
    }
    resolve(out);
  });
  hls.loadSource('/pkg/index.m3u8');
  hls.attachMedia(v);
})`, &r); err != nil {
		t.Fatal(err)
	}
	t.Logf("hls.js: ended %v, %d text tracks (%q, %q), %d cues, errors %v", r.Ended, r.Tracks, r.Label, r.Lang, len(r.Cues), r.Errors)
	if !r.Ended || r.Tracks != 1 || r.Label != "English" || r.Lang != "en" {
		t.Fatalf("hls.js: %+v", r)
	}
	var got []webvtt.Cue
	for _, c := range r.Cues {
		got = append(got, webvtt.Cue{Start: int64(c.Start*1e6 + 0.5), End: int64(c.End*1e6 + 0.5), Text: c.Text})
	}
	mediatest.CheckCues(t, got, mediatest.PublishedCues(2, 0))
}
