package service_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestTwoAPIRecordingsIntoOnePackageDirectoryAreNotBothTaken: every
// HLS/DASH package names its files alike (v0.mp4, a0.mp4, v0.m3u8), so a
// recording started through the API into rec/b.m3u8 while another writes
// its package into rec/a.m3u8 ends with an error that says so, and so
// does one started after the first ended (its package is in rec/ on
// disk); neither touches the first package, which plays whole. A start
// into rec/a.m3u8 once the first ended continues that package, which
// still plays whole.
func TestTwoAPIRecordingsIntoOnePackageDirectoryAreNotBothTaken(t *testing.T) {
	t.Parallel()
	url, pin := demoRelay(t, "demo")
	root := t.TempDir()
	_, base := serve(t, service.Options{Root: root})
	start := func(output, duration string) (service.RecordingJSON, string) {
		t.Helper()
		var rec service.RecordingJSON
		code, body := call(t, "POST", base+"/api/v1/recordings", service.StartRequest{URL: url, TLSFingerprint: pin, Broadcast: "demo",
			Output: output, Duration: duration}, &rec)
		if code != http.StatusCreated || rec.ID == "" {
			t.Fatalf("start into %s: %d %s", output, code, body)
		}
		return rec, base + "/api/v1/recordings/" + rec.ID
	}
	ended := func(one string) service.RecordingJSON {
		t.Helper()
		var rec service.RecordingJSON
		waitFor(t, "the recording's end", func() bool {
			call(t, "GET", one, nil, &rec)
			return rec.State == "ended"
		})
		return rec
	}
	a, aURL := start("rec/a.m3u8", "")
	waitFor(t, "frames of a", func() bool {
		call(t, "GET", aURL, nil, &a)
		return a.Stats.Frames > 30
	})
	_, bURL := start("rec/b.m3u8", "1s")
	if b := ended(bURL); !strings.Contains(b.Error, "is where the package a.m3u8 is being recorded now") {
		t.Errorf("b while a records: %+v, want an error saying a.m3u8 is being recorded there", b)
	}
	if code, body := call(t, "DELETE", aURL, nil, &a); code != http.StatusOK || a.State != "ended" || a.Error != "" {
		t.Fatalf("stop a: %d %s", code, body)
	}
	_, bURL = start("rec/b.m3u8", "1s")
	if b := ended(bURL); !strings.Contains(b.Error, "holds the HLS/DASH package a.m3u8") {
		t.Errorf("b after a: %+v, want an error saying rec/ holds a.m3u8", b)
	}
	mediatest.DecodeClean(t, filepath.Join(root, "rec", "a.m3u8"))
	// The same live broadcast recorded again at once joins at its newest
	// keyframe, often one the package holds: the continuation is on the
	// package's timeline and writes none of it again, and ffmpeg decodes
	// the package clean (before, the run went 100 ms after the package's
	// end, and ffmpeg read the repeated frames across the discontinuity
	// as non-increasing times in 3 runs of 20).
	_, aURL = start("rec/a.m3u8", "1s")
	if a := ended(aURL); a.Error != "" {
		t.Fatalf("continuing a: %+v", a)
	}
	mediatest.DecodeClean(t, filepath.Join(root, "rec", "a.m3u8"))
}
