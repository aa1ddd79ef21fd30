package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/webtransport-go"
)

// testErrors are the Errors of this package's tests.
type testErrors struct{}

type testResetError struct {
	code  uint64
	words string
}

func (e *testResetError) Error() string { return fmt.Sprintf("reset: code %d (%s)", e.code, e.words) }

type testCloseError struct {
	code   uint64
	reason string
	remote bool
}

func (e *testCloseError) Error() string {
	return fmt.Sprintf("closed (remote %v): code %#x %q", e.remote, e.code, e.reason)
}

func (testErrors) Reset(code uint64, words string) error { return &testResetError{code, words} }
func (testErrors) Closed(code uint64, reason string, remote bool) error {
	return &testCloseError{code, reason, remote}
}
func (testErrors) IsClosed(err error) bool {
	_, ok := errors.AsType[*testCloseError](err)
	return ok
}

// endingServer listens for WebTransport sessions and ends each, as
// MediaMTX's profile ends a draft-16 SETUP it cannot read: it reads one
// byte of the client's first bidi stream and closes the session with
// code 0.
func endingServer(t *testing.T) (addr string) {
	t.Helper()
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen[testErrors]("127.0.0.1:0", ListenConfig{Certificates: []tls.Certificate{cert}, Protocols: []string{"moqt-16"},
		WebTransport: true, KeepAlive: time.Second, IdleTimeout: 10 * time.Second}, func(a Accepted) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s, err := a.Conn.AcceptBidi(ctx)
		if err == nil {
			_, err = s.Read(make([]byte, 1))
		}
		if err != nil {
			a.Conn.Close(1, "no stream")
			return
		}
		a.Conn.Close(0, "")
		<-a.Conn.Context().Done()
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}

// TestAPeersCloseOfAWebTransportSessionIsWhatTheReadItCutReports: a
// server ends each session while the client reads its answer (the SETUP
// a MediaMTX-like server ends with code 0, from which the client learns
// to speak draft 18's messages and dials again). Every such read reports
// the peer's close with code 0: not the read deadline with which the
// transport wakes the reads of an ended session ("i/o timeout"), nor the
// close of the QUIC connection that webtransport-go makes once the
// session ended (H3_NO_ERROR, locally), which quic-go reports first to a
// reader woken late. Both are races: a hundred sessions make them show.
func TestAPeersCloseOfAWebTransportSessionIsWhatTheReadItCutReports(t *testing.T) {
	t.Parallel()
	addr := endingServer(t)
	u, err := url.Parse("https://" + addr + "/live/test")
	if err != nil {
		t.Fatal(err)
	}
	const sessions = 100
	wrong := map[string]int{}
	for range sessions {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := DialWebTransport[testErrors](ctx, u, addr, &tls.Config{InsecureSkipVerify: true}, []string{"moqt-16"}, time.Second, 10*time.Second)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		s, err := c.OpenBidi(ctx)
		if err == nil {
			_, err = s.Write([]byte("x"))
		}
		if err == nil {
			_, err = s.Read(make([]byte, 1))
		}
		if ce, ok := errors.AsType[*testCloseError](err); !ok || !ce.remote || ce.code != 0 {
			wrong[fmt.Sprint(err)]++
		}
		c.Close(0, "")
		cancel()
	}
	if len(wrong) > 0 {
		t.Errorf("of %d reads cut by the peer's close (code 0), these reported something else: %v", sessions, wrong)
	}
}

// TestACallCutByTheQUICCloseThatFollowsTheSessionsEndReportsTheSessionsEnd:
// once the peer ended a dialled session, webtransport-go closes its QUIC
// connection with H3_NO_ERROR; a stream call the session's end woke late
// (a loaded machine) gets that local close from quic-go, here the error a
// raw QUIC stream of the same connection gets. The session's call reports
// the peer's close, code 0, which is what a moq-transport client learns
// from (a local close teaches it nothing, and the dial failed: #26).
func TestACallCutByTheQUICCloseThatFollowsTheSessionsEndReportsTheSessionsEnd(t *testing.T) {
	t.Parallel()
	addr := endingServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	qconns := make(chan *quic.Conn, 1)
	tr := &webtransport.Transport{
		TLSClientConfig:      &tls.Config{InsecureSkipVerify: true},
		QUICConfig:           QUICConfig(time.Second, 10*time.Second),
		ApplicationProtocols: []string{"moqt-16"},
		DialAddr: func(ctx context.Context, addr string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			c, err := quic.DialAddrEarly(ctx, addr, tc, qc)
			if err == nil {
				qconns <- c
			}
			return c, err
		},
	}
	defer tr.Close()
	_, sess, err := tr.Dial(ctx, "https://"+addr+"/live/test", http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	qc := <-qconns
	w := &wtConn[testErrors]{s: sess, remote: addr}
	// A raw stream of the connection, which the session's end does not
	// cancel: its read ends only with the QUIC connection.
	raw, err := qc.OpenStreamSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rawErr := make(chan error, 1)
	go func() {
		_, err := raw.Read(make([]byte, 1))
		rawErr <- err
	}()
	s, err := w.OpenBidi(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var cut error
	select {
	case cut = <-rawErr:
	case <-ctx.Done():
		t.Fatal("the QUIC connection was not closed after the peer ended the session")
	}
	if ae, ok := errors.AsType[*quic.ApplicationError](cut); !ok || ae.Remote {
		t.Fatalf("the raw stream's read ended with %v, not the local close of its QUIC connection", cut)
	}
	got := w.mapErr(cut)
	if ce, ok := errors.AsType[*testCloseError](got); !ok || !ce.remote || ce.code != 0 {
		t.Errorf("a call cut by %v reports %v, want the peer's close with code 0", cut, got)
	}
}
