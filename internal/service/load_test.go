package service_test

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/overload"
	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/record"
)

// TestAnOverloadedRecorderRefusesAPIStartsWith503: while the overload
// monitor says the recorder is behind (forced here: its state and Admit
// are the test's), a start is answered 503 with Retry-After and the
// monitor's reason, counted as refused for "overload", and creates
// nothing; the metrics show the monitor's figures. Once it is no longer
// overloaded the same start records.
func TestAnOverloadedRecorderRefusesAPIStartsWith503(t *testing.T) {
	t.Parallel()
	url, pin := demoRelay(t, "demo")
	var over atomic.Bool
	over.Store(true)
	busy := errors.New("the recorder is overloaded: about 300 packets can queue")
	state := func() overload.State {
		return overload.State{Overloaded: over.Load(), Episodes: 1,
			Last: overload.Sample{Wait: 3 * time.Millisecond, Rate: 100_000}}
	}
	_, base := serve(t, service.Options{Root: t.TempDir(), Load: state,
		Base: record.Options{Admit: func() error {
			if over.Load() {
				return busy
			}
			return nil
		}}})
	start := service.StartRequest{URL: url, TLSFingerprint: pin, Broadcast: "demo", Output: "rec/{broadcast}.mkv"}

	req, _ := http.NewRequest("POST", base+"/api/v1/recordings", strings.NewReader(`{"url":"`+url+`","tls_fingerprint":"`+pin+`","broadcast":"demo","output":"rec/x.mkv"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("start while overloaded: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if code, body := call(t, "POST", base+"/api/v1/recordings", start, nil); code != http.StatusServiceUnavailable || !strings.Contains(body, "overloaded") {
		t.Fatalf("start while overloaded: %d %s", code, body)
	}
	var list struct{ Recordings []service.RecordingJSON }
	call(t, "GET", base+"/api/v1/recordings", nil, &list)
	if len(list.Recordings) != 0 {
		t.Fatalf("refused starts created %+v", list.Recordings)
	}
	m := scrape(t, base)
	for name, want := range map[string]float64{
		"moq_export_overloaded": 1, "moq_export_overload_episodes_total": 1, "moq_export_scheduling_wait_seconds": 0.003,
		"moq_export_received_packets_per_second": 100_000, "moq_export_receive_backlog_packets": 300,
	} {
		if got := metric(m, name); got < want*0.999 || got > want*1.001 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := metric(m, "moq_export_publishers_refused_total", "reason", "overload"); got != 2 {
		t.Errorf("refused for overload: %v, want 2", got)
	}

	over.Store(false)
	var rec service.RecordingJSON
	if code, body := call(t, "POST", base+"/api/v1/recordings", start, &rec); code != http.StatusCreated {
		t.Fatalf("start once the overload passed: %d %s", code, body)
	}
	if metric(scrape(t, base), "moq_export_overloaded") != 0 {
		t.Error("moq_export_overloaded stays 1")
	}
	if code, body := call(t, "DELETE", base+"/api/v1/recordings/"+rec.ID, nil, &rec); code != http.StatusOK {
		t.Fatalf("stop: %d %s", code, body)
	}
}
