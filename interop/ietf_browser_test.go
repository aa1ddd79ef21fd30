package interop

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/browsertest"
	"github.com/moq-export/moq-export/subscribe"
)

// TestIETFBrowserPublisherIntoListen: @moq/net 0.3.4 in headless Chromium
// (browser/ietf-publish.ts) offers one draft (moqt-16, the control-stream
// shape, and moqt-20, the newest) in WT-Available-Protocols,
// dials our server over WebTransport and publishes the sample broadcast;
// we accept that draft (the protocol Chromium negotiated) and record every
// frame, as for the raw QUIC cases. Deno's WebTransport cannot negotiate a
// protocol, so this is the newest draft over WebTransport against the
// reference.
func TestIETFBrowserPublisherIntoListen(t *testing.T) {
	t.Parallel()
	needReference(t)
	bundle := filepath.Join("dist", "browser", "ietf-publish.js")
	js, err := os.ReadFile(bundle)
	if err != nil {
		t.Fatalf("%s: %v; %s", bundle, err, setupHint)
	}
	b := browsertest.New(t, browsertest.Options{Timeout: 90 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()

	tlsCert, cert := ourCert(t)
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{tlsCert}})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	t.Cleanup(func() { _ = srv.Close() })

	for _, d := range []struct{ proto, version string }{
		{"moqt-16", "moq-transport-16"},
		{"moqt-20", "moq-transport-20"},
	} {
		t.Run(d.proto, func(t *testing.T) {
			m := sampleBroadcast("interop/ietf-browser-"+d.proto+".hang", 2)
			page := t.TempDir()
			manifest, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string][]byte{
				"ietf-publish.js": js,
				"manifest.json":   manifest,
				"index.html":      []byte(`<!doctype html><meta charset="utf-8"><script type="module" src="ietf-publish.js"></script>`),
			} {
				if err := os.WriteFile(filepath.Join(page, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			q := url.Values{
				"url":         {fmt.Sprintf("https://127.0.0.1:%d/browser", srv.Addr().(*net.UDPAddr).Port)},
				"fingerprint": {cert.fingerprint},
				"protocols":   {d.proto},
			}
			origin := browsertest.ServeDir(t, page)
			if err := b.Navigate(origin + "/index.html?" + q.Encode()); err != nil {
				t.Fatal(err)
			}
			pub := pagePublisher(t, b)
			sess, err := srv.Accept(ctx)
			if err != nil {
				t.Fatalf("Accept: %v", err)
			}
			if got := sess.Version(); got != d.version {
				t.Fatalf("negotiated %q, want %s", got, d.version)
			}
			if sess.Path() != "browser" {
				t.Errorf("session path %q, want browser (the CONNECT path)", sess.Path())
			}
			recordPublished(ctx, t, sess, m, pub)
		})
	}
}

// pagePublisher makes the page's event list (window.moqEvents) look like a
// reference program's stdout: each Eval waits in the page for new events;
// "log" events go to stderr, "exit" ends the process.
func pagePublisher(t *testing.T, b *browsertest.Browser) *refProcess {
	p := &refProcess{t: t, name: "browser/ietf-publish", events: make(chan event, 4096),
		stderr: &lockedBuffer{}, exited: make(chan struct{})}
	const next = `new Promise((resolve) => {
  const poll = () => window.moqEvents && window.moqEvents.length ? resolve(window.moqEvents.splice(0)) : setTimeout(poll, 20);
  poll();
})`
	go func() {
		defer close(p.exited)
		defer close(p.events)
		for {
			var lines []string
			if err := b.Eval(next, &lines); err != nil {
				p.err = err
				return
			}
			for _, line := range lines {
				var ev event
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					ev = event{Event: "garbage", Message: line}
				}
				ev.raw = []byte(line)
				switch ev.Event {
				case "log":
					fmt.Fprintln(p.stderr, ev.Message)
					continue
				case "exit":
					var code struct{ Code int }
					_ = json.Unmarshal(ev.raw, &code)
					if code.Code != 0 {
						p.err = fmt.Errorf("page exited with %d", code.Code)
					}
					return
				}
				p.events <- ev
			}
		}
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s log:\n%s", p.name, p.stderr.String())
		}
	})
	return p
}
