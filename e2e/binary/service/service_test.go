package service

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"
)

// scrapeMetrics reads base/metrics with the Prometheus text parser.
func scrapeMetrics(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Error(err)
		return nil
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Errorf("parsing /metrics: %v", err)
	}
	return fams
}

func value(fams map[string]*dto.MetricFamily, name string) float64 {
	f := fams[name]
	if f == nil || len(f.GetMetric()) == 0 {
		return -1
	}
	m := f.GetMetric()[0]
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// statusPageLine is the command's notice of its --http address.
var statusPageLine = regexp.MustCompile(`status page on (http://[0-9.:]+)`)

// statusPage returns the base URL the command's log names for --http.
func statusPage(t *testing.T, log []string) string {
	t.Helper()
	for _, line := range log {
		if m := statusPageLine.FindStringSubmatch(line); m != nil {
			return m[1]
		}
	}
	t.Fatalf("no status page line:\n%s", strings.Join(log, "\n"))
	return ""
}

// labelled is the value of name's series whose label is value; 0 when it
// has none (a counter never incremented is not exported).
func labelled(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	for _, m := range fams[name].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestTheServiceFaceOfTheCommand runs moq-export as a service (flags from
// a --config file, --record-all of a relay with two broadcasts, --http,
// a signed --webhook): /metrics is scraped while it records; SIGTERM
// finishes both files and exits 0; the webhook receiver scrapes /metrics
// once more when the last recording.ended arrives (the listener is up
// until the events are delivered), and those counters equal the closing
// --summary's.
func TestTheServiceFaceOfTheCommand(t *testing.T) {
	t.Parallel()
	_, url, pin := cmdtest.Relay(t, "room/a", "room/b")
	dir := t.TempDir()
	secret := []byte("hook-secret")
	os.WriteFile(filepath.Join(dir, "secret"), secret, 0o600)
	os.WriteFile(filepath.Join(dir, "moq-export.yaml"), []byte("record-all: true\noutput: rec/{broadcast}.mkv\nprogress: never\nhttp: 127.0.0.1:0\n"), 0o644)

	var (
		mu     sync.Mutex
		events []service.Event
		base   string
		final  map[string]*dto.MetricFamily
	)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := service.Verify(secret, r.Header.Get(service.HeaderTimestamp), r.Header.Get(service.HeaderSignature), body, time.Minute, time.Now()); err != nil {
			t.Errorf("webhook: %v", err)
		}
		var ev service.Event
		json.Unmarshal(body, &ev)
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		ended := 0
		for _, e := range events {
			if e.Type == service.EventRecordingEnded {
				ended++
			}
		}
		if ended == 2 {
			final = scrapeMetrics(t, base)
		}
	}))
	defer hook.Close()

	cmd, errOut := cmdtest.Start(t, dir, url, "--tls-fingerprint", pin, "--config", "moq-export.yaml", "--webhook", hook.URL,
		"--webhook-secret-file", "secret", "--summary", "sum.json")
	errOut.WaitFor(t, "status page on http://")
	m := statusPageLine.FindStringSubmatch(errOut.String())
	mu.Lock()
	base = m[1]
	mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams := scrapeMetrics(t, base)
		if value(fams, "moq_export_recordings_active") == 2 && value(fams, "moq_export_frames_written_total") > 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed 2 recordings writing:\n%s", errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	resp, err := http.Get(base + "/api/v1/recordings")
	if err != nil {
		t.Fatal(err)
	}
	var list struct{ Recordings []service.RecordingJSON }
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Recordings) != 2 {
		t.Errorf("the API lists %d recordings, want 2", len(list.Recordings))
	}

	cmd.Process.Signal(syscall.SIGTERM)
	if code := cmdtest.ExitCode(t, cmd, 40*time.Second); code != 0 {
		t.Fatalf("SIGTERM: exit %d\n%s", code, errOut.String())
	}
	var sum struct {
		Files   []struct{ Path string }
		Frames  int64
		Bytes   int64
		Late    int64
		Dropped int64
	}
	b, err := os.ReadFile(filepath.Join(dir, "sum.json"))
	if err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(b, &sum)
	if len(sum.Files) != 2 {
		t.Fatalf("summary lists %d files", len(sum.Files))
	}
	for _, f := range sum.Files {
		mediatest.DecodeClean(t, filepath.Join(dir, f.Path))
	}
	mu.Lock()
	defer mu.Unlock()
	if final == nil {
		t.Fatalf("the receiver did not get both recording.ended events before the exit: %d events", len(events))
	}
	for _, c := range []struct {
		name string
		want int64
	}{
		{"moq_export_frames_written_total", sum.Frames},
		{"moq_export_bytes_written_total", sum.Bytes},
		{"moq_export_frames_late_total", sum.Late},
		{"moq_export_recordings_started_total", 2},
		{"moq_export_recordings_active", 0},
		{"moq_export_files_finished_total", 2},
	} {
		if got := value(final, c.name); got != float64(c.want) {
			t.Errorf("%s = %v at the end, the summary says %d", c.name, got, c.want)
		}
	}
	perRec := map[string][]string{}
	for _, e := range events {
		perRec[e.Recording.ID] = append(perRec[e.Recording.ID], e.Type)
	}
	for id, types := range perRec {
		if len(types) != 4 || types[0] != service.EventRecordingStarted || types[3] != service.EventRecordingEnded {
			t.Errorf("recording %s: events %v", id, types)
		}
	}
}

// TestTheAPIRecordsFromListen: `moq-export --listen ADDR --http ADDR` with
// no -o records nothing by itself; a POST with "listen": true records the
// broadcast a connected publisher announced, and SIGTERM finishes that
// file (it decodes) and exits 0.
func TestTheAPIRecordsFromListen(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg")
	t.Parallel()
	dir := t.TempDir()
	l := cmdtest.StartListener(t, dir, "-v", "--http", "127.0.0.1:0")
	base := statusPage(t, l.Log)
	l.WaitLine(t, "recording only what the API starts from the publishers of --listen")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	sess := publisher(t, ctx, l.Addr, l.Pin)
	publishDemo(t, ctx, sess, "alice", demo.Options{})
	l.WaitLine(t, "publisher announced a broadcast", "broadcast=alice")
	body, _ := json.Marshal(service.StartRequest{Listen: true, Broadcast: "alice", Output: "rec/{broadcast}.mkv"})
	resp, err := http.Post(base+"/api/v1/recordings", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("start: %d %s", resp.StatusCode, answer)
	}
	l.WaitLine(t, "writing", "alice.mkv")
	time.Sleep(1500 * time.Millisecond)
	l.Cmd.Process.Signal(syscall.SIGTERM)
	if err := l.Wait(t, 30*time.Second); err != nil {
		t.Fatalf("SIGTERM: %v\n%s", err, strings.Join(l.Log, "\n"))
	}
	path := filepath.Join(dir, "rec", "alice.mkv")
	cmdtest.Decode(t, path)
	if files, _ := filepath.Glob(filepath.Join(dir, "rec", "*")); len(files) != 1 {
		t.Errorf("files %v, want the one the API started", files)
	}
}
