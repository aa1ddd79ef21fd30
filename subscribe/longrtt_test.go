package subscribe

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
)

// syncBuffer is a log a test reads while the session writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestADialWhoseRoundTripIsLongerThanItsIdleTimeoutStillConnects: a
// dial through a path whose round trip (2 s) is longer than the idle
// timeout asked (1 s) connects, over each SETUP path (the control stream
// of draft 15, the SETUP streams of draft 17 and later, moq-lite's legacy
// SETUP) and over WebTransport, whose CONNECT comes after the handshake
// too. The exchange after the handshake was bounded by the idle timeout,
// not by the SETUP's budget: quic-go had no RTT sample to stretch it by
// (it declares a packet lost as soon as it probes, so ACKs slower than
// its probe timeout give none), and "timeout: no recent network
// activity" ended the dial. The dial is made once more with an idle
// timeout of three handshakes, which the log says.
func TestADialWhoseRoundTripIsLongerThanItsIdleTimeoutStillConnects(t *testing.T) {
	cases := []struct{ version, scheme string }{
		{"moq-transport-15", "moqt"},
		{"moq-transport-22", "moqt"},
		{"lite-04", "moql"},
		{"moq-transport-22", "https"},
		{"lite-06", "https"},
	}
	for _, tc := range cases {
		t.Run(tc.version+"/"+tc.scheme, func(t *testing.T) {
			t.Parallel()
			srv, pin := startServer(t, "127.0.0.1:0")
			defer srv.Close()
			go func() {
				for {
					if _, err := srv.Accept(context.Background()); err != nil {
						return
					}
				}
			}()
			px, err := udpproxy.New(srv.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer px.Close()
			px.Delay(time.Second)
			logs := &syncBuffer{}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			s, err := Dial(ctx, tc.scheme+"://"+px.Addr()+"/", Options{TLSFingerprint: pin, Versions: []string{tc.version},
				IdleTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
			if err != nil {
				t.Fatalf("dial over a 2 s round trip with a 1 s idle timeout: %v\nlog:\n%s", err, logs)
			}
			defer s.Close()
			if v := s.Version(); !strings.HasSuffix(v, tc.version) {
				t.Fatalf("connected with %s, want %s", v, tc.version)
			}
			t.Logf("log:\n%s", logs)
		})
	}
}

// TestTheIdleTimeoutOfTheDialMadeAgainIsThreeHandshakesWithinItsBounds:
// the one dial made again after the idle timeout cut what followed the
// handshake gets three handshakes' worth (a round trip or more each),
// never less than the idle timeout asked, never more than the SETUP's
// budget.
func TestTheIdleTimeoutOfTheDialMadeAgainIsThreeHandshakesWithinItsBounds(t *testing.T) {
	for _, c := range []struct {
		name            string
		handshake, idle time.Duration
		want            time.Duration
	}{
		{"a 2 s handshake and a 1 s idle timeout", 2 * time.Second, time.Second, 6 * time.Second},
		{"a handshake shorter than a third of the idle timeout", 500 * time.Millisecond, 3 * time.Second, 3 * time.Second},
		{"a handshake longer than a third of the SETUP budget", 5 * time.Second, time.Second, maxStretchedIdle},
		{"an idle timeout longer than the SETUP budget", 5 * time.Second, 30 * time.Second, 30 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := stretchedIdle(c.handshake, c.idle); got != c.want {
				t.Fatalf("stretchedIdle(%v, %v) = %v, want %v", c.handshake, c.idle, got, c.want)
			}
		})
	}
}
