package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// RequiredEnv names the environment variable that, set to 1, turns a missing
// Chromium into a test failure instead of a skip. CI=true does the same.
const RequiredEnv = "MOQ_BROWSER_REQUIRED"

// DefaultPath is where Debian's chromium package installs its launcher.
const DefaultPath = "/usr/bin/chromium"

// baseFlags are the switches a root-run Chromium needs on a closed test
// machine. Without the background-networking ones it stalls trying to reach
// Google services.
var baseFlags = []string{
	"headless",
	"no-sandbox",
	"disable-gpu",
	"disable-quic",
	"no-first-run",
	"no-default-browser-check",
	"disable-background-networking",
	"disable-component-update",
	"disable-sync",
	"disable-extensions",
	"disable-dev-shm-usage",
	"mute-audio",
}

// Options configures a browser launch.
type Options struct {
	// Flags are extra Chromium switches without the leading "--", either
	// "name" or "name=value", for example "use-fake-device-for-media-stream",
	// "use-fake-ui-for-media-stream" or "autoplay-policy=no-user-gesture-required".
	Flags []string
	// Timeout bounds everything the browser does for the test (launch,
	// navigation, every Eval); 0 means 60 seconds.
	Timeout time.Duration
}

// Browser is one running Chromium with one tab, closed when the test ends.
type Browser struct {
	t   testing.TB
	ctx context.Context
}

// Required reports whether the environment demands a real browser: CI=true
// or MOQ_BROWSER_REQUIRED=1.
func Required() bool {
	return os.Getenv(RequiredEnv) == "1" || os.Getenv("CI") == "true"
}

// Find returns the path of the Chromium executable: DefaultPath, else
// "chromium" or "chromium-browser" on PATH; "" when there is none.
func Find() string {
	if fi, err := os.Stat(DefaultPath); err == nil && fi.Mode()&0o111 != 0 {
		return DefaultPath
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Path returns the Chromium executable, or skips t with a clear message
// when there is none (fails it when Required).
func Path(t testing.TB) string {
	t.Helper()
	p := Find()
	if p == "" {
		msg := "chromium not installed: this test plays the output in a real browser (scripts/install-test-deps.sh installs Debian's chromium, as CI does)"
		if Required() {
			t.Fatalf("%s=1 or CI=true: %s", RequiredEnv, msg)
		}
		t.Skip(msg)
	}
	return p
}

// New launches Chromium for t with a fresh profile and opens one tab. It
// skips t when Chromium is absent (see Path) and fails it when the browser
// does not start. The browser is closed when t ends.
func New(t testing.TB, opts Options) *Browser {
	t.Helper()
	path := Path(t)
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	// Not t.TempDir: Chromium's helper processes can still write into
	// the profile for a moment after the browser has exited, and
	// TempDir's removal then fails the test ("directory not empty").
	profile, err := os.MkdirTemp("", "browsertest-profile-")
	if err != nil {
		t.Fatal(err)
	}
	alloc := []chromedp.ExecAllocatorOption{
		chromedp.NoDefaultBrowserCheck,
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 720),
	}
	for _, f := range append(append([]string(nil), baseFlags...), opts.Flags...) {
		name, value, hasValue := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if hasValue {
			alloc = append(alloc, chromedp.Flag(name, value))
		} else {
			alloc = append(alloc, chromedp.Flag(name, true))
		}
	}
	ctx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, alloc...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancelTimeout()
		removeProfile(t, profile)
	})
	// Run with no actions starts the browser and attaches the tab.
	if err := chromedp.Do(tabCtx); err != nil {
		t.Fatalf("start chromium %s: %v", path, err)
	}
	return &Browser{t: t, ctx: tabCtx}
}

// removeProfile removes a closed browser's profile, trying again for up
// to 5 s while its helper processes finish writing into it.
func removeProfile(t testing.TB, dir string) {
	var err error
	for range 50 {
		if err = os.RemoveAll(dir); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("leaving Chromium's profile %s: %v", dir, err)
}

// Context is the tab's context, for running chromedp actions directly.
func (b *Browser) Context() context.Context { return b.ctx }

// Navigate loads url in the tab and waits for its load event.
func (b *Browser) Navigate(url string) error {
	if err := chromedp.Do(b.ctx, chromedp.Navigate(url)); err != nil {
		return fmt.Errorf("navigate to %s: %w", url, err)
	}
	return nil
}

// Eval evaluates the JavaScript expression js in the page, awaits it when it
// is a promise, and stores its JSON value in out (a pointer, or nil to drop
// it). A thrown exception or a rejected promise is an error.
func (b *Browser) Eval(js string, out any) error {
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return fmt.Errorf("evaluate %.80q: %w", js, err)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("evaluate %.80q: result %.200s: %w", js, raw, err)
	}
	return nil
}

// ServeDir serves the files in dir over HTTP on a loopback port until t
// ends and returns its base URL (no trailing slash). http.FileServer answers
// Range requests (http.ServeContent), which <video> needs to seek.
func ServeDir(t testing.TB, dir string) string {
	t.Helper()
	return Serve(t, http.FileServer(http.Dir(dir)))
}

// Serve serves h over HTTP on a loopback port until t ends and returns its
// base URL (no trailing slash).
func Serve(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	})
	return "http://" + ln.Addr().String()
}
