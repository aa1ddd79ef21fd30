package binary

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// TestARefusedTokenEndsTheRun: a subscriber with a token the server
// refuses ends at once, over moq-lite (moq-export --listen --auth-key) and
// moq-transport (a server that speaks only draft 17) alike: the command
// (with --list, and recording with -b) exits 1 saying the relay refused
// the token, and subscribe.Dial's session ends with a *RefusedError
// wrapping ErrUnauthorized. Neither reconnects: the server logs one
// refusal per run.
func TestARefusedTokenEndsTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key, err := token.Generate("HS256")
	if err != nil {
		t.Fatal(err)
	}
	l := cmdtest.StartListener(t, dir, "--auth-key", cmdtest.WriteKey(t, dir, key), "-o", "rec/{broadcast}.mkv")
	// countLite reads the listener's log until it went quiet for a while,
	// and returns the refusals it logged since the last call.
	countLite := func() int {
		n := 0
		for {
			select {
			case line, ok := <-l.Lines:
				if !ok {
					t.Fatalf("the listener exited:\n%s", strings.Join(l.Log, "\n"))
				}
				l.Log = append(l.Log, line)
				if strings.Contains(line, "refused a session") {
					n++
				}
			case <-time.After(time.Second):
				return n
			}
		}
	}
	ietfAddr, ietfPin, countIETF := startIETFAuthServer(t, key)
	for _, tc := range []struct {
		scheme, addr, pin string
		count             func() int
	}{
		{"moql", l.Addr, l.Pin, countLite},
		{"moqt", ietfAddr, ietfPin, countIETF},
	} {
		scheme, countRefusals := tc.scheme, tc.count
		url := scheme + "://" + tc.addr + "/studio?jwt=garbage"
		l := struct{ pin string }{tc.pin}
		for _, args := range [][]string{
			{url, "--tls-fingerprint", l.pin, "--list"},
			{url, "--tls-fingerprint", l.pin, "-b", "cam", "-o", filepath.Join(dir, scheme+".mkv")},
		} {
			r := cmdtest.Run(t, dir, args...)
			if r.Code != 1 {
				t.Errorf("%s %v: exit %d, want 1\n%s", scheme, args[3:], r.Code, r.Stderr)
			}
			if !strings.Contains(r.Stderr, "error: the relay refused the token (unauthorized)") {
				t.Errorf("%s %v: stderr lacks the refusal:\n%s", scheme, args[3:], r.Stderr)
			}
			if strings.Contains(r.Stderr, "connection lost") || strings.Contains(r.Stderr, "garbage") {
				t.Errorf("%s %v: reconnected, or logged the token:\n%s", scheme, args[3:], r.Stderr)
			}
			if n := countRefusals(); n != 1 {
				t.Errorf("%s %v: the listener refused %d sessions, want 1", scheme, args[3:], n)
			}
		}
		// The library: the session ends with a typed error, once.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: l.pin, Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			select {
			case <-sess.Done():
				err = sess.Err()
			case <-ctx.Done():
				err = ctx.Err()
			}
			sess.Close()
		}
		cancel()
		if _, ok := errors.AsType[*subscribe.RefusedError](err); !ok || !errors.Is(err, subscribe.ErrUnauthorized) {
			t.Errorf("%s: subscribe.Dial: %v, want a *RefusedError wrapping ErrUnauthorized", scheme, err)
		}
		if n := countRefusals(); n != 1 {
			t.Errorf("%s: subscribe.Dial: the listener refused %d sessions, want 1", scheme, n)
		}
	}
}

// startIETFAuthServer starts a server that speaks only moq-transport
// draft 17 and admits tokens of key; count returns the sessions it
// refused since its last call, once none came for a while.
func startIETFAuthServer(t *testing.T, key *token.Key) (addr, pin string, count func() int) {
	t.Helper()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	verifier, err := token.ParseKey(mustJSON(t, key))
	if err != nil {
		t.Fatal(err)
	}
	refused := make(chan struct{}, 100)
	log := slog.New(&lineHandler{match: "refused a session", seen: refused})
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert},
		Versions: []string{"moq-transport-17"}, AuthKey: verifier, Logger: log, DisableWebTransport: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv.Addr().String(), pin, func() int {
		n := 0
		for {
			select {
			case <-refused:
				n++
			case <-time.After(time.Second):
				return n
			}
		}
	}
}

func mustJSON(t *testing.T, key *token.Key) []byte {
	js, err := key.PublicJSON()
	if err != nil {
		js, err = key.MarshalJSON()
	}
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// lineHandler is a slog handler that signals seen for every record whose
// message contains match.
type lineHandler struct {
	match string
	seen  chan struct{}
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.match) {
		h.seen <- struct{}{}
	}
	return nil
}
func (h *lineHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *lineHandler) WithGroup(string) slog.Handler      { return h }

// TestAStreamNamedByTheURLPathIsRecordedFromAServerWithoutDiscovery: a
// moq-transport server that ties a session to the stream of its path and
// closes the session on SUBSCRIBE_NAMESPACE and on optional SUBSCRIBE
// parameters (as MediaMTX does; subscribe.ServerOptions.Strict) records
// moqt://HOST:PORT/live/test as the stream live/test, and the file
// decodes; --list says the server offers no discovery.
func TestAStreamNamedByTheURLPathIsRecordedFromAServerWithoutDiscovery(t *testing.T) {
	cmdtest.NeedTools(t, "ffmpeg", "ffprobe")
	t.Parallel()
	dir := t.TempDir()
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bc := model.NewBroadcast("live/test")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert},
		Versions: []string{"moq-transport-18"}, Strict: true, Publish: []*model.Broadcast{bc},
		Logger: slog.New(slog.DiscardHandler), DisableWebTransport: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := "moqt://" + srv.Addr().String() + "/live/test"

	r := cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "--list")
	if r.Code != 0 || !strings.Contains(r.Stderr, "offers no discovery") {
		t.Errorf("--list: exit %d\n%s", r.Code, r.Stderr)
	}
	r = cmdtest.Run(t, dir, url, "--tls-fingerprint", pin, "-v", "-o", "x.mkv", "--duration", "2s")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s", r.Code, r.Stderr)
	}
	for _, want := range []string{"recording the stream the URL path names", "offers no discovery", "without them, and without FETCH, from now on"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the log lacks %q:\n%s", want, r.Stderr)
		}
	}
	path := filepath.Join(dir, "x.mkv")
	cmdtest.Decode(t, path)
	p := cmdtest.Probe(t, path)
	cmdtest.ExpectFrames(t, p, "h264", 2)
}
