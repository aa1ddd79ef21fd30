package subscribe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go/http3"

	"github.com/moq-export/moq-export/internal/moq/ietf/ietfsub"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// TestRefusedByTellsRefusalsFromOtherCloses: the session closes that end a
// dialled session for good are the peer's, with a code of the session's
// protocol that means a refused token, a protocol violation, no common
// version or a refused path (or "unauthorized" in words); every other
// close is retried.
func TestRefusedByTellsRefusalsFromOtherCloses(t *testing.T) {
	cases := []struct {
		name string
		err  error
		ietf bool
		want error // nil: retried
	}{
		{"lite unauthorized (old registry)", &CloseError{Code: 6, Remote: true}, false, ErrUnauthorized},
		{"lite unauthorized (lite-06 registry)", &CloseError{Code: 0x2, Remote: true}, false, ErrUnauthorized},
		{"lite protocol violation", &CloseError{Code: 15, Remote: true}, false, ErrProtocol},
		{"lite version", &CloseError{Code: 9, Remote: true}, false, ErrVersion},
		{"lite too many sessions", &CloseError{Code: CodeTooMany, Reason: "too many sessions", Remote: true}, false, nil},
		{"lite cancel", &CloseError{Code: 0, Remote: true}, false, nil},
		{"our own close", &CloseError{Code: 6}, false, nil},
		{"ietf unauthorized", &CloseError{Code: 0x2, Remote: true}, true, ErrUnauthorized},
		{"ietf 6 is not unauthorized", &CloseError{Code: 0x6, Remote: true}, true, nil},
		{"ietf invalid path", &CloseError{Code: 0x8, Remote: true}, true, ErrPathRefused},
		{"ietf malformed path", &CloseError{Code: 0x9, Remote: true}, true, ErrPathRefused},
		{"ietf version", &CloseError{Code: 0x15, Remote: true}, true, ErrVersion},
		{"ietf internal error", &CloseError{Code: 0x1, Remote: true}, true, nil},
		{"application code saying unauthorized", &CloseError{Code: 64 + 401, Reason: "Unauthorized", Remote: true}, true, ErrUnauthorized},
		{"wrapped", fmt.Errorf("setup: %w", &CloseError{Code: 6, Remote: true}), false, ErrUnauthorized},
		{"not a close", errors.New("timeout"), false, nil},
	}
	for _, tc := range cases {
		codes := &liteCodes
		if tc.ietf {
			codes = &ietfsub.Codes
		}
		r, ok := refusedBy(tc.err, codes)
		if ok != (tc.want != nil) {
			t.Errorf("%s: refused %v, want %v", tc.name, ok, tc.want != nil)
			continue
		}
		if ok && !errors.Is(r, tc.want) {
			t.Errorf("%s: %v is not %v", tc.name, r, tc.want)
		}
	}
}

// TestCloseErrorsSayTheirMeaningInWords: a close names its code in the
// registry of the session's protocol, and webtransport-go's unconvertible
// stream resets come out as words, not raw HTTP/3 numbers. The close of
// the QUIC connection under a WebTransport session, whose code is
// HTTP/3's, is said in the transport's words, in either family's
// session: H3_NO_ERROR (0x100) is not moq-lite's "application 192".
func TestCloseErrorsSayTheirMeaningInWords(t *testing.T) {
	for _, codes := range []*session.Codes{nil, &ietfsub.Codes} {
		got := withCodes(moqErrors{}.Closed(0x100, "", false, "HTTP/3 H3_NO_ERROR"), codes).Error()
		if !strings.Contains(got, "code 256 (HTTP/3 H3_NO_ERROR)") {
			t.Errorf("HTTP/3's 0x100 (family codes %v): %q", codes != nil, got)
		}
	}
	if got := (&CloseError{Code: 0x2, Remote: true, codes: &ietfsub.Codes}).Error(); !strings.Contains(got, "(unauthorized)") {
		t.Errorf("ietf 0x2: %q", got)
	}
	if got := (&CloseError{Code: 0x8, Remote: true, codes: &ietfsub.Codes}).Error(); !strings.Contains(got, "(invalid path)") {
		t.Errorf("ietf 0x8: %q", got)
	}
	if got := (&CloseError{Code: 6, Remote: true}).Error(); !strings.Contains(got, "(unauthorized)") {
		t.Errorf("lite 6: %q", got)
	}
	raw := fmt.Errorf("stream reset, but failed to convert stream error 966049156: %w", errors.New("error code outside of expected range"))
	got := transport.MapError[moqErrors](raw)
	if re, ok := errors.AsType[*ResetError](got); !ok || re.Code != 966049156 || !strings.Contains(got.Error(), "session is gone") {
		t.Errorf("unconvertible WebTransport reset: %v", got)
	}
}

// TestAConnectStreamEndedWithoutACloseCapsuleIsThePeersClose: MediaMTX's
// webtransport-go (0.12) ends a session's CONNECT stream in a way ours
// (0.13) reports as a malformed capsule, "H3_DATAGRAM_ERROR (local):
// unexpected EOF"; read as what it is, the peer's close with code 0, a
// session ended right after a request it does not support is learnt from
// (compat.go) instead of retried in vain until the backoff gives up.
func TestAConnectStreamEndedWithoutACloseCapsuleIsThePeersClose(t *testing.T) {
	for _, tc := range []struct {
		msg    string
		remote bool
	}{{"unexpected EOF", true}, {"EOF", true}, {"datagram too large", false}} {
		got := transport.MapError[moqErrors](&http3.Error{ErrorCode: http3.ErrCodeDatagramError, ErrorMessage: tc.msg})
		ce, ok := errors.AsType[*CloseError](got)
		if ok != tc.remote || (ok && (!ce.Remote || ce.Code != 0)) {
			t.Errorf("%q: %#v", tc.msg, got)
		}
	}
}

// TestASessionClosedRightAfterSetupBacksOff: a server that closes every
// session right after its SETUP (here: one more than MaxSessions), ten
// times and more, is redialled with a growing jittered backoff, never in
// a tight loop: each attempt waits the delay announced after the one
// before, and that delay is at least half the backoff's step for the
// failures in a row so far. Once ten attempts failed the session is told
// to give up (GiveUp shortened), which it does naming the server's reason. (A moq-transport client may see the close before the
// server's SETUP: then the dial fails, which counts the same.)
func TestASessionClosedRightAfterSetupBacksOff(t *testing.T) {
	for _, tr := range []struct {
		name, scheme string
		opts         Options
	}{
		{"webtransport-lite-05", "https", Options{Versions: []string{"lite-05"}}},
		{"quic-ietf-draft-17", "moqt", Options{alpns: []string{"moqt-17"}}},
	} {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cert, pin, err := SelfSignedCert()
			if err != nil {
				t.Fatal(err)
			}
			srv, err := Listen("127.0.0.1:0", ServerOptions{Certificates: []tls.Certificate{cert}, Logger: testLogger(t), MaxSessions: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			url := fmt.Sprintf("%s://%s/", tr.scheme, srv.Addr())
			opts := tr.opts
			opts.TLSFingerprint, opts.Logger = pin, testLogger(t)
			opts.Reconnect.Disabled = true
			first, peer := dialAndAccept(t, ctx, srv, url, opts)
			defer first.Close()
			defer peer.Close()

			attempts := &attemptLog{}
			opts.Logger = slog.New(attempts)
			b := Backoff{Min: 20 * time.Millisecond, Max: 160 * time.Millisecond, GiveUp: time.Hour}
			opts.Reconnect = b
			// The first connection is Dial's alone (it does not retry):
			// dial until one got through its SETUP.
			var second *Session
			for second == nil {
				second, err = Dial(ctx, url, opts)
				if err != nil && !strings.Contains(err.Error(), "too many sessions") {
					t.Fatal(err)
				}
			}
			defer second.Close()
			for len(attempts.get()) < 10 {
				select {
				case <-second.Done():
					t.Fatalf("the session ended after %d attempts: %v", len(attempts.get()), second.Err())
				case <-ctx.Done():
					t.Fatalf("%d attempts failed in 30 s, want 10", len(attempts.get()))
				case <-time.After(5 * time.Millisecond):
				}
			}
			second.giveUpTest.Store(int64(time.Millisecond))
			select {
			case <-second.Done():
			case <-ctx.Done():
				t.Fatal("the session never gave up")
			}
			err = second.Err()
			if !strings.Contains(err.Error(), "gave up") || !strings.Contains(err.Error(), "too many sessions") {
				t.Errorf("final error %q does not name the server's reason", err)
			}
			if _, ok := errors.AsType[*CloseError](err); !ok {
				t.Errorf("final error %v wraps no *CloseError", err)
			}
			got := attempts.get()
			if len(got) < 10 {
				t.Fatalf("%d attempts failed, want at least 10", len(got))
			}
			for i, a := range got {
				if a.failed != i+1 {
					t.Fatalf("attempt %d counted %d failures in a row, want %d", i+1, a.failed, i+1)
				}
				if least := min(b.Min<<i, b.Max) / 2; a.retryIn < least {
					t.Errorf("attempt %d: retry in %v, less than the backoff's least %v", i+1, a.retryIn, least)
				}
				if i > 0 {
					if gap := a.at.Sub(got[i-1].at); gap < got[i-1].retryIn {
						t.Errorf("attempt %d failed %v after attempt %d, which announced a wait of %v", i+1, gap, i, got[i-1].retryIn)
					}
				}
			}
			if peer.Err() != nil || first.Err() != nil {
				t.Fatalf("the admitted session ended: %v / %v", peer.Err(), first.Err())
			}
		})
	}
}

// attemptLog is a slog handler that notes each failed attempt a session
// logs ("connection lost", "reconnect failed"): when, its failures in a
// row and the wait it announced.
type attemptLog struct {
	mu  sync.Mutex
	got []failedAttempt
}

type failedAttempt struct {
	at      time.Time
	failed  int
	retryIn time.Duration
}

func (l *attemptLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *attemptLog) Handle(_ context.Context, r slog.Record) error {
	if !strings.Contains(r.Message, "connection lost") && !strings.Contains(r.Message, "reconnect failed") {
		return nil
	}
	a := failedAttempt{at: time.Now(), failed: -1}
	r.Attrs(func(x slog.Attr) bool {
		switch x.Key {
		case "failed_in_a_row":
			a.failed = int(x.Value.Int64())
		case "retry_in":
			a.retryIn = x.Value.Duration()
		}
		return true
	})
	l.mu.Lock()
	l.got = append(l.got, a)
	l.mu.Unlock()
	return nil
}
func (l *attemptLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *attemptLog) WithGroup(string) slog.Handler      { return l }

func (l *attemptLog) get() []failedAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]failedAttempt(nil), l.got...)
}
