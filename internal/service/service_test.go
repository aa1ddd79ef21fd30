package service_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

var quiet = slog.New(slog.DiscardHandler)

// demoRelay serves the demo as live broadcasts on loopback QUIC, as a
// relay would, until the test ends.
func demoRelay(t testing.TB, names ...string) (url, pin string) {
	t.Helper()
	return demoRelayWith(t, demo.Options{Realtime: true}, names...)
}

// demoRelayWith is demoRelay with the demo's options.
func demoRelayWith(t testing.TB, opts demo.Options, names ...string) (url, pin string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var bcs []*model.Broadcast
	for _, n := range names {
		b := model.NewBroadcast(n)
		go demo.Publish(ctx, b, opts)
		bcs = append(bcs, b)
	}
	srv, url, pin, err := subscribe.ServeLoopback(bcs[0], subscribe.ServerOptions{Publish: bcs[1:], Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); cancel() })
	return url, pin
}

// serve starts a service over opts on a loopback port until the test ends
// and returns it with its base URL.
func serve(t testing.TB, opts service.Options) (*service.Service, string) {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.Base.Logger == nil {
		opts.Base.Logger = quiet
	}
	s, err := service.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr, err := s.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer ccancel()
		s.Close(cctx)
		cancel()
	})
	return s, "http://" + addr.String()
}

// call makes an API request and decodes the JSON answer into out (when
// not nil); it returns the status code and the raw body.
func call(t testing.TB, method, url string, body any, out any) (int, string) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, url, err, raw)
		}
	}
	return resp.StatusCode, string(raw)
}

// waitFor polls cond for up to 30 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scrape reads /metrics with the Prometheus text parser.
func scrape(t testing.TB, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metric returns the value of the family name's sample whose labels
// include labels (name=value pairs); -1 when there is none.
func metric(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return -1
}

// TestTheAPIRecordsSplitsMarksAndStopsTheDemo drives one recording end to
// end over loopback HTTP: start the demo, list it, split it (two files),
// mark a chapter (ffprobe lists it), stop it (every file finished and
// decoding); /metrics, scraped while it records and after, agrees with the
// recording's own closing stats.
func TestTheAPIRecordsSplitsMarksAndStopsTheDemo(t *testing.T) {
	t.Parallel()
	url, pin := demoRelay(t, "demo")
	root := t.TempDir()
	_, base := serve(t, service.Options{Root: root})

	var rec service.RecordingJSON
	code, body := call(t, "POST", base+"/api/v1/recordings", service.StartRequest{URL: url, TLSFingerprint: pin, Broadcast: "demo",
		Output: "rec/{broadcast}-{n}.mkv"}, &rec)
	if code != http.StatusCreated || rec.ID == "" {
		t.Fatalf("start: %d %s", code, body)
	}
	one := base + "/api/v1/recordings/" + rec.ID
	waitFor(t, "frames", func() bool {
		call(t, "GET", one, nil, &rec)
		return rec.Stats.Frames > 60
	})
	var list struct{ Recordings []service.RecordingJSON }
	call(t, "GET", base+"/api/v1/recordings", nil, &list)
	if len(list.Recordings) != 1 || list.Recordings[0].ID != rec.ID || list.Recordings[0].State != "recording" || list.Recordings[0].Broadcast != "demo" {
		t.Fatalf("list: %+v", list)
	}

	during := scrape(t, base)
	if v := metric(during, "moq_export_recordings_active"); v != 1 {
		t.Errorf("recordings_active %v while recording", v)
	}
	if v := metric(during, "moq_export_frames_written_total"); v <= 0 {
		t.Errorf("frames_written_total %v while recording", v)
	}

	if code, body := call(t, "POST", one+"/split", nil, nil); code != http.StatusAccepted {
		t.Fatalf("split: %d %s", code, body)
	}
	waitFor(t, "the second file", func() bool {
		call(t, "GET", one, nil, &rec)
		return len(rec.Files) == 2 && rec.Files[1].Frames > 30
	})
	if code, body := call(t, "POST", one+"/chapters", map[string]string{"name": "question time"}, nil); code != http.StatusAccepted {
		t.Fatalf("chapter: %d %s", code, body)
	}
	waitFor(t, "frames after the chapter", func() bool {
		var r service.RecordingJSON
		call(t, "GET", one, nil, &r)
		return r.Files[1].Frames > rec.Files[1].Frames+30
	})
	if code, body := call(t, "DELETE", one, nil, &rec); code != http.StatusOK || rec.State != "ended" || rec.Result != "stopped" {
		t.Fatalf("stop: %d %s", code, body)
	}
	if len(rec.Files) != 2 {
		t.Fatalf("%d files after a split, want 2: %+v", len(rec.Files), rec.Files)
	}
	var frames int64
	for i, f := range rec.Files {
		if !f.Finished || f.Href == "" {
			t.Errorf("file %s not finished after the stop", f.Path)
		}
		p := mediatest.Probe(t, f.Path, "-show_chapters")
		mediatest.DecodeClean(t, f.Path)
		if int64(len(p.Packets)) != f.Frames {
			t.Errorf("%s: ffprobe reads %d packets, the API says %d frames", f.Path, len(p.Packets), f.Frames)
		}
		frames += f.Frames
		want := 0
		if i == 1 {
			want = 1
		}
		if len(p.Chapters) != want || want == 1 && p.Chapters[0].Tags["title"] != "question time" {
			t.Errorf("%s: chapters %+v, want %d", f.Path, p.Chapters, want)
		}
	}
	after := scrape(t, base)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"moq_export_recordings_active", nil, 0},
		{"moq_export_recordings_started_total", nil, 1},
		{"moq_export_recordings_ended_total", []string{"result", "stopped"}, 1},
		{"moq_export_files_finished_total", nil, 2},
		{"moq_export_frames_written_total", nil, float64(rec.Stats.Frames)},
		{"moq_export_bytes_written_total", nil, float64(rec.Stats.Bytes)},
		{"moq_export_frames_late_total", nil, float64(rec.Stats.Late)},
		{"moq_export_sessions_total", []string{"version", "moq-lite-03"}, -2},
	} {
		got := metric(after, c.name, c.labels...)
		if c.want == -2 {
			continue
		}
		if got != c.want {
			t.Errorf("%s%v = %v, the recording's closing stats say %v", c.name, c.labels, got, c.want)
		}
	}
	if rec.Stats.Frames != frames {
		t.Errorf("stats say %d frames, the files %d", rec.Stats.Frames, frames)
	}
	dropped := metric(after, "moq_export_frames_dropped_total", "reason", "late") + metric(after, "moq_export_frames_dropped_total", "reason", "muxer")
	if dropped != float64(rec.Stats.Dropped) {
		t.Errorf("frames_dropped_total sums to %v, the stats say %d", dropped, rec.Stats.Dropped)
	}
	if v := metric(after, "moq_export_disk_free_bytes"); v <= 0 {
		t.Errorf("disk_free_bytes %v", v)
	}
	var sessions float64
	for _, m := range after["moq_export_sessions_total"].GetMetric() {
		sessions += m.Counter.GetValue()
	}
	if sessions != 1 {
		t.Errorf("sessions_total %v, want the one the start dialled", sessions)
	}
	// The finished files are served for the status page's players.
	resp, err := http.Get(base + rec.Files[0].Href)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n != rec.Files[0].Size {
		t.Errorf("GET %s: %d, %d bytes, want the %d of the file", rec.Files[0].Href, resp.StatusCode, n, rec.Files[0].Size)
	}
}

// TestBadRequestsGet4xxWithAMessageAndCreateNothing: a start with unknown
// fields, an output that leaves the root, a bad URL or no broadcast is
// answered 4xx with a message, and no file or directory is made.
func TestBadRequestsGet4xxWithAMessageAndCreateNothing(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, service.Options{Root: root})
	good := `"url": "https://relay.example/anon", "broadcast": "b"`
	for _, tc := range []struct {
		name string
		body string
		code int
		says string
	}{
		{"unknown field", `{` + good + `, "output": "x.mkv", "colour": "red"}`, 400, `unknown field "colour"`},
		{"not JSON", `output=x.mkv`, 400, "not the JSON"},
		{"two objects", `{` + good + `, "output": "x.mkv"} {}`, 400, "more than one"},
		{"escaping template", `{` + good + `, "output": "../{broadcast}.mkv"}`, 400, "leaves the service's root"},
		{"escaping deeper", `{` + good + `, "output": "a/../../../etc/{broadcast}.mkv"}`, 400, "leaves the service's root"},
		{"absolute output", `{` + good + `, "output": "/tmp/{broadcast}.mkv"}`, 400, "absolute"},
		{"bad placeholder", `{` + good + `, "output": "{nope}.mkv"}`, 400, "unknown placeholder"},
		{"bad URL scheme", `{"url": "ftp://relay.example/x", "broadcast": "b", "output": "x.mkv"}`, 400, `url scheme "ftp"`},
		{"URL without host", `{"url": "https:///x", "broadcast": "b", "output": "x.mkv"}`, 400, "no host"},
		{"no URL", `{"broadcast": "b", "output": "x.mkv"}`, 400, "url is empty"},
		{"no broadcast", `{"url": "https://relay.example/anon", "output": "x.mkv"}`, 400, "broadcast is empty"},
		{"bad format", `{` + good + `, "output": "x", "format": "avi"}`, 400, "unknown format"},
		{"bad duration", `{` + good + `, "output": "x.mkv", "duration": "soon"}`, 400, "duration"},
		{"segment without {n}", `{` + good + `, "output": "x.mkv", "segment": "10s"}`, 400, "{n} or {time}"},
		{"bad webhook", `{` + good + `, "output": "x.mkv", "webhooks": ["file:///etc/passwd"]}`, 400, "webhook"},
		{"unreachable relay", `{"url": "moql://127.0.0.1:9/x", "broadcast": "b", "output": "{broadcast}.mkv"}`, 502, "connecting to"},
		{"listen and a URL", `{` + good + `, "listen": true, "output": "x.mkv"}`, 400, "give no url"},
		{"listen without --listen", `{"listen": true, "broadcast": "b", "output": "x.mkv"}`, 409, "has no --listen"},
		{"wait without listen", `{` + good + `, "output": "x.mkv", "wait": "5s"}`, 400, "with listen"},
		{"a wait too long", `{"listen": true, "broadcast": "b", "output": "x.mkv", "wait": "1h"}`, 400, "at most 5m"},
	} {
		code, body := call(t, "POST", base+"/api/v1/recordings", tc.body, nil)
		var e struct{ Error string }
		_ = json.Unmarshal([]byte(body), &e)
		if code != tc.code || !strings.Contains(e.Error, tc.says) {
			t.Errorf("%s: %d %q; want %d saying %q", tc.name, code, body, tc.code, tc.says)
		}
	}
	for _, tc := range []struct{ method, path string }{
		{"GET", "/api/v1/recordings/42"}, {"DELETE", "/api/v1/recordings/42"}, {"POST", "/api/v1/recordings/42/split"},
	} {
		if code, body := call(t, tc.method, base+tc.path, nil, nil); code != 404 || !strings.Contains(body, "no recording") {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, body)
		}
	}
	if code, _ := call(t, "GET", base+"/files/../root/x.mkv", nil, nil); code != 404 {
		t.Errorf("a file path leaving the root: %d", code)
	}
	var made []string
	filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
		if p != parent && p != root {
			made = append(made, p)
		}
		return nil
	})
	if len(made) > 0 {
		t.Errorf("bad requests created %q", made)
	}
	var list struct{ Recordings []service.RecordingJSON }
	call(t, "GET", base+"/api/v1/recordings", nil, &list)
	if len(list.Recordings) != 0 {
		t.Errorf("bad requests listed recordings: %+v", list.Recordings)
	}
}

// TestATokenGuardsEverythingButHealth: with a token, /health answers
// anyone, everything else only a request that carries it; without one,
// an address other hosts reach is refused.
func TestATokenGuardsEverythingButHealth(t *testing.T) {
	t.Parallel()
	_, base := serve(t, service.Options{Root: t.TempDir(), Token: "s3cret-token"})
	for _, tc := range []struct {
		path, auth string
		code       int
	}{
		{"/health", "", 200},
		{"/metrics", "", 401},
		{"/api/v1/recordings", "", 401},
		{"/", "", 401},
		{"/ready", "Bearer wrong", 401},
		{"/metrics", "Bearer s3cret-token", 200},
		{"/api/v1/recordings", "Bearer s3cret-token", 200},
		{"/ready", "Bearer s3cret-token", 200},
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("GET %s with %q: %d, want %d", tc.path, tc.auth, resp.StatusCode, tc.code)
		}
	}
	s, err := service.New(service.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Serve(context.Background(), "0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("serving every interface without a token: %v", err)
	}
}

// TestReadyFailsWhileTheSourceIsNotConnected: /ready follows the
// command's readiness and the output's writability; /health stays up.
func TestReadyFailsWhileTheSourceIsNotConnected(t *testing.T) {
	t.Parallel()
	var down error = fmt.Errorf("relay not connected")
	_, base := serve(t, service.Options{Root: t.TempDir(), Ready: func() error { return down }})
	if code, body := call(t, "GET", base+"/ready", nil, nil); code != 503 || !strings.Contains(body, "relay not connected") {
		t.Errorf("/ready while down: %d %q", code, body)
	}
	if code, _ := call(t, "GET", base+"/health", nil, nil); code != 200 {
		t.Errorf("/health while not ready: %d", code)
	}
	down = nil
	if code, body := call(t, "GET", base+"/ready", nil, nil); code != 200 {
		t.Errorf("/ready when up: %d %q", code, body)
	}
}

// recordAll runs a Recorder over src for the service until ctx ends.
func recordAll(t testing.TB, s *service.Service, opts record.Options, src record.Source, ctx context.Context) (*record.Recorder, chan error) {
	t.Helper()
	opts.Logger = quiet
	s.Hooks(&opts)
	r, err := record.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Watch(r)
	done := make(chan error, 1)
	go func() { done <- r.RecordAll(ctx, src) }()
	return r, done
}

func names(fs []record.FileInfo) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Broadcast)
	}
	slices.Sort(out)
	return out
}

// TestTheAPIRecordsAPublisherOfListen: with the publishers of a --listen
// server as its listen source, a start with "listen": true records the
// broadcast a publisher announced (a clean file, both tracks, no hole,
// the API's frame count equal to ffprobe's); one that no publisher
// announces is answered 404 and creates nothing.
func TestTheAPIRecordsAPublisherOfListen(t *testing.T) {
	t.Parallel()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}, Logger: quiet, ReleaseRead: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src := record.NewServerSource(srv)
	defer src.Close()
	root := t.TempDir()
	svc, base := serve(t, service.Options{Root: root})
	svc.SetListen(src)
	feed, err := src.Announced(context.Background()) // accepting from now on
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: pin, Logger: quiet}
	pub, err := subscribe.Dial(ctx, "moql://"+srv.Addr().String()+"/", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	bc := model.NewBroadcast("alice")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	if err := pub.Publish(bc); err != nil {
		t.Fatal(err)
	}

	var rec service.RecordingJSON
	code, body := call(t, "POST", base+"/api/v1/recordings", service.StartRequest{Listen: true, Broadcast: "alice", Output: "{broadcast}.mkv"}, &rec)
	if code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	one := base + "/api/v1/recordings/" + rec.ID
	waitFor(t, "frames", func() bool {
		call(t, "GET", one, nil, &rec)
		return rec.Stats.Frames > 90
	})
	if code, body := call(t, "DELETE", one, nil, &rec); code != http.StatusOK || rec.Result != "stopped" || len(rec.Files) != 1 {
		t.Fatalf("stop: %d %s", code, body)
	}
	path := rec.Files[0].Path
	mediatest.DecodeClean(t, path)
	p := mediatest.Probe(t, path)
	if int64(len(p.Packets)) != rec.Files[0].Frames || len(p.Streams) != 2 {
		t.Errorf("%s: %d packets in %d streams, the API says %d frames", path, len(p.Packets), len(p.Streams), rec.Files[0].Frames)
	}
	for i := range p.Streams {
		var ts []float64
		for _, pk := range p.PacketsOf(i) {
			v, _ := strconv.ParseFloat(pk.PTSTime, 64)
			ts = append(ts, v)
		}
		slices.Sort(ts)
		if at, gap := mediatest.LargestGap(ts); gap > 0.1 {
			t.Errorf("stream %d: a hole of %.3f s at packet %d", i, gap, at)
		}
	}

	code, body = call(t, "POST", base+"/api/v1/recordings", service.StartRequest{Listen: true, Broadcast: "nobody", Output: "{broadcast}.mkv", Wait: "1s"}, nil)
	if code != http.StatusNotFound || !strings.Contains(body, "no publisher on --listen announced") {
		t.Errorf("a broadcast nobody announces: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(root, "nobody.mkv")); err == nil {
		t.Errorf("a refused start created nobody.mkv")
	}
}
