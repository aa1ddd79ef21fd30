package hls_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// players are the npm players the browser tests load, pinned in
// interop/package.json and installed by scripts/install-test-deps.sh.
var players = map[string]string{
	"/lib/hls.js":  "../../interop/node_modules/hls.js/dist/hls.min.js",
	"/lib/dash.js": "../../interop/node_modules/dashjs/dist/modern/umd/dash.all.min.js",
}

// page is the test page: a <video> and both players.
const page = `<!doctype html><html><body><video id="v" muted playsinline width="320"></video>
<script src="/lib/hls.js"></script><script src="/lib/dash.js"></script></body></html>`

// serve serves dir under /pkg/, the players under /lib/ and the page, and
// opens the page in a fresh Chromium. It skips without Chromium or the
// players (fails when browsertest.Required).
func serve(t *testing.T, dir string) *browsertest.Browser {
	t.Helper()
	for _, p := range players {
		if _, err := os.Stat(p); err != nil {
			msg := "hls.js/dashjs not installed in interop/node_modules: scripts/install-test-deps.sh installs them (npm ci)"
			if browsertest.Required() {
				t.Fatalf("%s=1 or CI=true: %s", browsertest.RequiredEnv, msg)
			}
			t.Skip(msg)
		}
	}
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}, Timeout: 90 * time.Second})
	mux := http.NewServeMux()
	for url, p := range players {
		mux.HandleFunc(url, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, p) })
	}
	mux.Handle("/pkg/", http.StripPrefix("/pkg/", packageServer(dir)))
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, page)
	})
	base := browsertest.Serve(t, mux)
	if err := b.Navigate(base + "/page.html"); err != nil {
		t.Fatal(err)
	}
	return b
}

// packageServer serves the package in dir as a live origin must
// (hls.ServeFile): every response carries an ETag naming exactly the
// bytes it holds, and the manifests are served Cache-Control: no-cache,
// so a player revalidates them on every reload and gets the new version
// when there is one.
//
// http.FileServer's only validator is Last-Modified, to the second: a
// playlist fetched and then rewritten within the same second answers every
// later revalidation (If-Modified-Since) with 304, and Chromium hands
// hls.js the stale copy for good. Under load that hid the final playlist
// (ENDLIST) of the EVENT package from the live test: hls.js reloaded the
// three-segment version for 80 s and never ended (stop 40's CI).
func packageServer(dir string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer root.Close()
		_ = hls.ServeFile(w, r, root, strings.TrimPrefix(r.URL.Path, "/"))
	})
}

// TestThePackageServerHandsARevalidatingPlayerAPlaylistRewrittenInTheSameSecond
// fetches a playlist, rewrites it with the same modification time (as a
// rewrite within the second looks to a Last-Modified validator), and
// revalidates as Chromium does: the new playlist must come back, and an
// unchanged one must still be a 304.
func TestThePackageServerHandsARevalidatingPlayerAPlaylistRewrittenInTheSameSecond(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "v0.m3u8")
	must(t, os.WriteFile(name, []byte("#EXTM3U\n#EXTINF:2,\nv0.mp4\n"), 0o644))
	fi, err := os.Stat(name)
	must(t, err)
	srv := httptest.NewServer(packageServer(dir))
	defer srv.Close()
	get := func(etag, lastModified string) (int, string, http.Header) {
		req, err := http.NewRequest("GET", srv.URL+"/v0.m3u8", nil)
		must(t, err)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
			req.Header.Set("If-Modified-Since", lastModified)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		must(t, err)
		return resp.StatusCode, string(b), resp.Header
	}
	code, _, h := get("", "")
	if code != http.StatusOK || h.Get("ETag") == "" || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("first fetch: %d, headers %v: want 200 with an ETag and Cache-Control: no-cache", code, h)
	}
	if code, _, _ := get(h.Get("ETag"), h.Get("Last-Modified")); code != http.StatusNotModified {
		t.Errorf("revalidating an unchanged playlist: %d, want 304", code)
	}
	final := "#EXTM3U\n#EXTINF:2,\nv0.mp4\n#EXT-X-ENDLIST\n"
	must(t, os.WriteFile(name, []byte(final), 0o644))
	must(t, os.Chtimes(name, fi.ModTime(), fi.ModTime()))
	if code, body, _ := get(h.Get("ETag"), h.Get("Last-Modified")); code != http.StatusOK || body != final {
		t.Errorf("revalidating the rewritten playlist: %d %q, want 200 and the new playlist", code, body)
	}
}

// freshVideo replaces the page's <video> with a new one, for a second
// package played in the same browser.
const freshVideo = `(() => { const v = document.createElement('video'); v.muted = true; v.playsInline = true; v.width = 320; document.getElementById('v').replaceWith(v); v.id = 'v'; return true; })()`

// hlsPlay is the JavaScript that plays /pkg/index.m3u8 with hls.js (or
// the playlist the second argument names): until
// 1 s of media played, then (when switchTo >= 0) forces level switchTo
// and waits for a fragment of it to play, then seeks 1.5 s before the end
// and waits for the end. It returns what happened.
const hlsPlay = `new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const hls = new Hls({debug: false});
  const out = {levels: 0, switched: -1, duration: 0, ended: false, frames: 0, errors: []};
  const fail = (msg) => reject(new Error(msg + ' ' + JSON.stringify(out)));
  setTimeout(() => fail('timeout'), 45000);
  hls.on(Hls.Events.ERROR, (e, d) => { out.errors.push(d.details); if (d.fatal) fail('fatal hls.js error ' + d.details); });
  hls.on(Hls.Events.MANIFEST_PARSED, (e, d) => { out.levels = d.levels.length; out.codecs = d.levels.map(l => l.videoCodec + '/' + l.audioCodec); v.play().catch(err => fail('play: ' + err)); });
  const target = %d;
  let phase = 0;
  hls.on(Hls.Events.FRAG_CHANGED, (e, d) => { if (phase === 1 && d.frag.level === target) { out.switched = d.frag.level; seekEnd(); } });
  const seekEnd = () => { phase = 2; out.duration = v.duration; v.currentTime = Math.max(v.duration - 1.5, 0); };
  v.addEventListener('timeupdate', () => {
    if (phase === 0 && v.currentTime > 1) {
      if (target >= 0) { phase = 1; hls.currentLevel = target; } else { seekEnd(); }
    }
  });
  v.addEventListener('ended', () => {
    out.ended = true; out.time = v.currentTime;
    out.frames = v.getVideoPlaybackQuality().totalVideoFrames;
    resolve(out);
  });
  hls.loadSource('/pkg/%s');
  hls.attachMedia(v);
})`

type playResult struct {
	Levels   int      `json:"levels"`
	Codecs   []string `json:"codecs"`
	Switched int      `json:"switched"`
	Duration float64  `json:"duration"`
	Time     float64  `json:"time"`
	Ended    bool     `json:"ended"`
	Frames   int      `json:"frames"`
	Errors   []string `json:"errors"`
	EndedBy  string   `json:"endedBy"`
}

// TestChromiumPlaysThePackageWithHLSJSAndSwitchesVariants records two
// H.264 sizes and two AAC renditions and plays them with hls.js: to the
// end, through a seek, and on the other variant when forced.
func TestChromiumPlaysThePackageWithHLSJSAndSwitchesVariants(t *testing.T) {
	ins := []mediatest.Input{
		renamed(looped("h264-360p", 0, 3), "360p"),
		renamed(looped("h264", 1, 3), "180p"),
		renamed(looped("aac", 2, 3), "main"),
		renamed(looped("aac", 3, 3), "alt"),
	}
	// The package in both layouts: byte ranges of one media file per
	// rendition (a directory's), and in files/ a file per segment (an
	// object store's), played one after the other in one browser.
	st, _ := record(t, hls.Options{}, ins...)
	files := &dirStore{dir: st.path("files")}
	must(t, os.Mkdir(files.dir, 0o755))
	w := hls.NewWriter(hls.Options{Store: files, SegmentFiles: true})
	mediatest.Feed(t, w, ins...)
	must(t, w.Close())
	b := serve(t, st.dir)
	for _, pl := range []string{"index.m3u8", "files/index.m3u8"} {
		var r playResult
		if err := b.Eval(freshVideo, new(bool)); err != nil {
			t.Fatal(err)
		}
		if err := b.Eval(fmt.Sprintf(hlsPlay, 1, pl), &r); err != nil {
			t.Fatalf("%s: %v", pl, err)
		}
		t.Logf("hls.js, %s: %+v", pl, r)
		if r.Levels != 2 || r.Switched != 1 || !r.Ended || r.Frames == 0 {
			t.Fatalf("hls.js played %s: %+v: want 2 levels, a switch to level 1, the end and decoded frames", pl, r)
		}
		if want := 12.0; r.Duration < want-0.2 || r.Duration > want+0.3 {
			t.Errorf("hls.js duration of %s %.3f s, the package holds %.1f s", pl, r.Duration, want)
		}
	}
}

// TestChromiumPlaysTheMPDWithDashJS plays a package's DASH manifest with
// dash.js, through a seek to its end, in both layouts (a SegmentList of
// byte ranges; a SegmentTemplate of files).
func TestChromiumPlaysTheMPDWithDashJS(t *testing.T) {
	ins := []mediatest.Input{looped("h264", 0, 2), looped("aac", 1, 2)}
	st, _ := record(t, hls.Options{}, ins...)
	files := &dirStore{dir: st.path("files")}
	must(t, os.Mkdir(files.dir, 0o755))
	w := hls.NewWriter(hls.Options{Store: files, SegmentFiles: true})
	mediatest.Feed(t, w, ins...)
	must(t, w.Close())
	b := serve(t, st.dir)
	for _, mpd := range []string{"index.mpd", "files/index.mpd"} {
		if err := b.Eval(freshVideo, new(bool)); err != nil {
			t.Fatal(err)
		}
		var r playResult
		err := b.Eval(`new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const out = {ended: false, duration: 0, frames: 0, errors: []};
  setTimeout(() => reject(new Error('timeout ' + JSON.stringify(out))), 45000);
  const p = dashjs.MediaPlayer().create();
  p.on(dashjs.MediaPlayer.events.ERROR, (e) => { out.errors.push(JSON.stringify(e.error)); reject(new Error('dash.js error ' + JSON.stringify(e.error))); });
  let seeked = false;
  v.addEventListener('timeupdate', () => {
    if (!seeked && v.currentTime > 1) { seeked = true; out.duration = v.duration; v.currentTime = v.duration - 1.5; }
  });
  const end = (by) => { if (out.ended) return; out.ended = true; out.endedBy = by; out.time = v.currentTime; out.frames = v.getVideoPlaybackQuality().totalVideoFrames; resolve(out); };
  v.addEventListener('ended', () => end('event'));
  // dash.js can pause the element right at the end of a static MPD (seen
  // under load), and an element paused at its end fires no 'ended'.
  const watch = setInterval(() => {
    if (out.ended) { clearInterval(watch); return; }
    if (seeked && (v.ended || (v.paused && v.duration > 0 && v.duration - v.currentTime < 0.05))) { clearInterval(watch); end('position'); }
  }, 500);
  p.initialize(v, '/pkg/`+mpd+`', true);
})`, &r)
		if err != nil {
			t.Fatalf("%s: %v", mpd, err)
		}
		t.Logf("dash.js, %s: %+v", mpd, r)
		if !r.Ended || r.Frames == 0 || r.Duration < 7.8 || r.Duration > 8.3 {
			t.Fatalf("dash.js played %s: %+v: want the 8 s package to its end", mpd, r)
		}
	}
}

// TestChromiumPlaysTheEventPackageWhileItIsRecorded starts hls.js on a
// package with two segments written, while the recording goes on, and
// plays it to the end the recording then writes. The package is written
// as -f hls writes it (DirStore): while it is recorded the player reads
// the manifests through their links into .manifests, and the store's
// Close turns them into plain files while it plays.
func TestChromiumPlaysTheEventPackageWhileItIsRecorded(t *testing.T) {
	ins := []mediatest.Input{looped("h264", 0, 2), looped("aac", 1, 2)}
	dir := t.TempDir()
	st, err := hls.OpenDirStore(dir)
	must(t, err)
	defer st.Close()
	w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: 2 * time.Second})
	frames := mediatest.Interleave(ins...)
	for _, tr := range mediatest.Tracks(ins...) {
		must(t, w.AddTrack(tr))
	}
	i := 0
	for ; i < len(frames) && frames[i].Timestamp < 4_500_000; i++ {
		must(t, w.WriteFrame(frames[i]))
	}
	if fi, err := os.Lstat(filepath.Join(dir, "v0.m3u8")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("v0.m3u8 while recorded: %v, want the link into .manifests", err)
	}
	b := serve(t, dir)
	var live struct {
		Live bool    `json:"live"`
		Time float64 `json:"time"`
	}
	if err := b.Eval(fmt.Sprintf(browsertest.HLSLive, 2.0, "/pkg/index.m3u8"), &live); err != nil {
		t.Fatal(err)
	}
	if !live.Live {
		t.Fatalf("hls.js did not see the package as live (EVENT) while it was recorded: %+v", live)
	}
	for ; i < len(frames); i++ {
		must(t, w.WriteFrame(frames[i]))
	}
	must(t, w.Close())
	must(t, st.Close())
	var end playResult
	if err := b.Eval(browsertest.HLSLiveEnd, &end); err != nil {
		t.Fatal(err)
	}
	if !end.Ended || end.Time < 7.5 || end.Frames == 0 {
		t.Fatalf("the package recorded while hls.js played it ended at %+v, want its end (8 s)", end)
	}
}

// TestChromiumDecodesTheseCodecsFromThePackage records one package per
// codec pair and plays it with hls.js, reporting what Chromium's Media
// Source Extensions take: Debian's Chromium decodes H.264, AV1, VP9, AAC,
// Opus and FLAC in CMAF; H.265 and AC-3 need platform decoders it lacks.
func TestChromiumDecodesTheseCodecsFromThePackage(t *testing.T) {
	for _, tc := range []struct{ video, audio string }{{"av1", "opus"}, {"vp9", "flac"}} {
		t.Run(tc.video+"+"+tc.audio, func(t *testing.T) {
			// The samples are 2-4 s long; loop them to 6 s.
			v, a := mediatest.LoadSample(tc.video), mediatest.LoadSample(tc.audio)
			vin := looped(tc.video, 0, int((6e6+v.Duration()-1)/v.Duration()))
			ain := looped(tc.audio, 1, int((6e6+a.Duration()-1)/a.Duration()))
			st, _ := record(t, hls.Options{}, vin, ain)
			b := serve(t, st.dir)
			var r playResult
			if err := b.Eval(fmt.Sprintf(hlsPlay, -1, "index.m3u8"), &r); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s+%s in hls.js: %+v", tc.video, tc.audio, r)
			if !r.Ended || r.Frames == 0 {
				t.Fatalf("%s+%s: hls.js played %+v", tc.video, tc.audio, r)
			}
		})
	}
}

// TestChromiumSaysWhichCodecStringsItTakes asks MediaSource.isTypeSupported
// about the CODECS string the package writes for every codec it carries:
// the ones Chromium decodes must be taken, and the log says the rest.
func TestChromiumSaysWhichCodecStringsItTakes(t *testing.T) {
	var ins []mediatest.Input
	names := []string{"h264", "h265", "av1", "vp9", "aac", "opus", "flac", "ac3"}
	for i, n := range names {
		ins = append(ins, looped(n, i, 1))
	}
	st, _ := record(t, hls.Options{}, ins...)
	s := readStateCodecs(t, st)
	b := serve(t, st.dir)
	var taken map[string]bool
	var list []string
	for _, c := range s {
		list = append(list, fmt.Sprintf("%q", c))
	}
	js := `(() => { const out = {}; for (const [kind, c] of [` + strings.Join(list, ",") + `].map(x => x.split('|'))) out[c] = MediaSource.isTypeSupported(kind + '/mp4; codecs="' + c + '"'); return out; })()`
	if err := b.Eval(js, &taken); err != nil {
		t.Fatal(err)
	}
	t.Logf("Chromium MSE takes: %v", taken)
	for codec, ok := range taken {
		for _, must := range []string{"avc1", "av01", "vp09", "mp4a", "opus", "flac"} {
			if strings.HasPrefix(codec, must) && !ok {
				t.Errorf("Chromium refuses %s, which it decodes", codec)
			}
		}
	}
}

// readStateCodecs returns "kind|codecs" of every rendition of a package.
func readStateCodecs(t *testing.T, st *dirStore) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(st.dir, "index.state.json"))
	must(t, err)
	var s struct {
		Renditions []struct{ Kind, Codecs string }
	}
	must(t, jsonUnmarshal(b, &s))
	var out []string
	for _, r := range s.Renditions {
		out = append(out, r.Kind+"|"+r.Codecs)
	}
	return out
}

// TestChromiumPlaysTheLiveMPDWithDashJS plays the dynamic MPD of a package
// being recorded into a directory with dash.js: the MPD with room after
// each list, 60 segments into the recording, its rooms filled in place
// at each boundary and renewed several times (Writer.mpd). dash.js must
// take it as live and play from it.
func TestChromiumPlaysTheLiveMPDWithDashJS(t *testing.T) {
	ins := []mediatest.Input{looped("h264", 0, 15), looped("aac", 1, 15)}
	dir := t.TempDir()
	st, err := hls.OpenDirStore(dir)
	must(t, err)
	defer st.Close()
	// The wall clock of the first frame: the media's 60 s ended just
	// now, as in a recording (availabilityStartTime is then a minute ago).
	w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: time.Second, Start: time.Now().Add(-60 * time.Second)})
	mediatest.Write(t, w, mediatest.Tracks(ins...), mediatest.Interleave(ins...))
	if w.MPDWhole() < 4 {
		t.Fatalf("the MPD was written whole %d times in 60 boundaries: its rooms were not renewed", w.MPDWhole())
	}
	mpdText, err := os.ReadFile(filepath.Join(dir, "index.mpd"))
	must(t, err)
	if !strings.Contains(string(mpdText), `type="dynamic"`) || !strings.Contains(string(mpdText), strings.Repeat(" ", 64)) {
		t.Fatalf("the MPD while recorded is not a dynamic one with room:\n%s", mpdText)
	}
	b := serve(t, dir)
	var r struct {
		Dynamic     bool
		Start, Time float64
		Frames      int
	}
	err = b.Eval(`new Promise((resolve, reject) => {
  const v = document.getElementById('v');
  const p = dashjs.MediaPlayer().create();
  const out = {};
  setTimeout(() => reject(new Error('no 1 s of playback within 30 s: ' + JSON.stringify({time: v.currentTime, readyState: v.readyState}))), 30000);
  p.on(dashjs.MediaPlayer.events.ERROR, (e) => reject(new Error('dash.js error ' + JSON.stringify(e.error))));
  v.addEventListener('timeupdate', () => {
    if (out.start === undefined && v.currentTime > 0) out.start = v.currentTime;
    if (out.start !== undefined && v.currentTime > out.start + 1) resolve({dynamic: p.isDynamic(), start: out.start, time: v.currentTime, frames: v.getVideoPlaybackQuality().totalVideoFrames});
  });
  p.initialize(v, '/pkg/index.mpd', true);
})`, &r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("dash.js on the live MPD: %+v", r)
	if !r.Dynamic || r.Frames == 0 || r.Time > 60.5 {
		t.Fatalf("dash.js played the live MPD as %+v: want it live, playing the recorded minute", r)
	}
	must(t, w.Close())
}
