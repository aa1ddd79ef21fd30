package browsertest_test

import (
	"net/http"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/browsertest"
)

// TestPageEvaluates loads a page from the local server and reads values the
// page's script computed, including an awaited promise and a flag the test
// passed on.
func TestPageEvaluates(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{"autoplay-policy=no-user-gesture-required"}})
	mux := http.NewServeMux()
	mux.HandleFunc("/page.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>bt</title><script>window.answer = 6 * 7;</script>`))
	})
	base := browsertest.Serve(t, mux)
	if err := b.Navigate(base + "/page.html"); err != nil {
		t.Fatal(err)
	}
	var title string
	if err := b.Eval(`document.title`, &title); err != nil {
		t.Fatal(err)
	}
	if title != "bt" {
		t.Errorf("title = %q, want bt", title)
	}
	var answer int
	if err := b.Eval(`new Promise(r => setTimeout(() => r(window.answer), 10))`, &answer); err != nil {
		t.Fatal(err)
	}
	if answer != 42 {
		t.Errorf("awaited answer = %d, want 42", answer)
	}
	if err := b.Eval(`Promise.reject(new Error("boom"))`, nil); err == nil {
		t.Error("a rejected promise evaluated without error")
	}
	var ua string
	if err := b.Eval(`navigator.userAgent`, &ua); err != nil {
		t.Fatal(err)
	}
	t.Logf("user agent: %s", ua)
}

// TestServeDirAnswersRanges checks the server <video> seeks through.
func TestServeDirAnswersRanges(t *testing.T) {
	dir := t.TempDir()
	if err := writeFile(dir+"/f.bin", []byte("0123456789")); err != nil {
		t.Fatal(err)
	}
	base := browsertest.ServeDir(t, dir)
	req, _ := http.NewRequest("GET", base+"/f.bin", nil)
	req.Header.Set("Range", "bytes=3-5")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("status %d, want 206", resp.StatusCode)
	}
	buf := make([]byte, 16)
	n, _ := resp.Body.Read(buf)
	if string(buf[:n]) != "345" {
		t.Errorf("range body %q, want 345", buf[:n])
	}
}

// TestExtraFlagsReachChromium passes the fake media device switches a
// browser publisher test needs and opens the fake camera.
func TestExtraFlagsReachChromium(t *testing.T) {
	b := browsertest.New(t, browsertest.Options{Flags: []string{
		"use-fake-device-for-media-stream", "use-fake-ui-for-media-stream",
	}})
	base := browsertest.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte(`<!doctype html><title>media</title>`))
	}))
	// 127.0.0.1 is a secure context, so getUserMedia is available over http.
	if err := b.Navigate(base + "/"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	err := b.Eval(`navigator.mediaDevices.getUserMedia({video: true, audio: true})
		.then(s => s.getTracks().map(t => t.kind).sort())`, &kinds)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != 2 || kinds[0] != "audio" || kinds[1] != "video" {
		t.Errorf("fake devices gave tracks %v, want [audio video]", kinds)
	}
}

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, required string
		want         bool
	}{
		{"", "", false},
		{"true", "", true},
		{"", "1", true},
		{"false", "0", false},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv(browsertest.RequiredEnv, tc.required)
		if got := browsertest.Required(); got != tc.want {
			t.Errorf("CI=%q %s=%q: Required() = %v, want %v", tc.ci, browsertest.RequiredEnv, tc.required, got, tc.want)
		}
	}
}
