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
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"

	"github.com/moq-export/moq-export/internal/testutil/udpproxy"
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
	words  string
}

func (e *testCloseError) Error() string {
	return fmt.Sprintf("closed (remote %v): code %#x (%s) %q", e.remote, e.code, e.words, e.reason)
}

func (testErrors) Reset(code uint64, words string) error { return &testResetError{code, words} }
func (testErrors) Closed(code uint64, reason string, remote bool, words string) error {
	return &testCloseError{code, reason, remote, words}
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
	return wtServer(t, func(a Accepted) {
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
}

// wtServer listens on loopback for draft-16 WebTransport sessions with a
// self-signed certificate, each served by handle, until the test ends.
func wtServer(t *testing.T, handle func(Accepted)) (addr string) {
	t.Helper()
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen[testErrors]("127.0.0.1:0", ListenConfig{Certificates: []tls.Certificate{cert}, Protocols: []string{"moqt-16"},
		WebTransport: true, KeepAlive: time.Second, IdleTimeout: 10 * time.Second}, handle)
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

// TestTheCloseOfTheQUICConnectionUnderAWebTransportSessionIsNamedInHTTP3sCodes:
// the QUIC connection under WebTransport sessions is HTTP/3's, so the code
// its close carries is HTTP/3's (or WebTransport's), which no session's
// registry names: moq-lite's read H3_NO_ERROR (0x100) as "application
// 192". A peer that closes the connection so is reported with the code
// in HTTP/3's words.
func TestTheCloseOfTheQUICConnectionUnderAWebTransportSessionIsNamedInHTTP3sCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		code  quic.ApplicationErrorCode
		words string
	}{
		{"H3_NO_ERROR", quic.ApplicationErrorCode(http3.ErrCodeNoError), "HTTP/3 H3_NO_ERROR"},
		{"H3_GENERAL_PROTOCOL_ERROR", quic.ApplicationErrorCode(http3.ErrCodeGeneralProtocolError), "HTTP/3 H3_GENERAL_PROTOCOL_ERROR"},
		{"WT_REQUIREMENTS_NOT_MET", webtransport.WTRequirementsNotMetErrorCode, "HTTP/3 WT_REQUIREMENTS_NOT_MET"},
		{"0, as webtransport-go's server closes", 0, "HTTP/3 code 0x0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := closingServer(t, tc.code)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			u, err := url.Parse("https://" + addr + "/live/test")
			if err != nil {
				t.Fatal(err)
			}
			c, err := DialWebTransport[testErrors](ctx, u, addr, &tls.Config{InsecureSkipVerify: true}, []string{"moqt-16"}, time.Second, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(0, "")
			s, err := c.OpenBidi(ctx)
			if err == nil {
				_, err = s.Write([]byte("x"))
			}
			if err == nil {
				_, err = s.Read(make([]byte, 1))
			}
			if ce, ok := errors.AsType[*testCloseError](err); !ok || !ce.remote || ce.code != uint64(tc.code) || ce.words != tc.words {
				t.Errorf("the peer closed the connection with %#x; the read reports %v, want the peer's close named %q", uint64(tc.code), err, tc.words)
			}
		})
	}
}

// closingServer serves WebTransport sessions and, once it has read a
// byte of the client's first bidi stream, closes the session's QUIC
// connection with code.
func closingServer(t *testing.T, code quic.ApplicationErrorCode) (addr string) {
	t.Helper()
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{http3.NextProtoH3}}
	ln, err := quic.ListenAddr("127.0.0.1:0", tc, QUICConfig(time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	wt := &webtransport.Server{H3: &http3.Server{Handler: mux, TLSConfig: tc}, ApplicationProtocols: []string{"moqt-16"},
		CheckOrigin: func(*http.Request) bool { return true }}
	webtransport.ConfigureHTTP3Server(wt.H3)
	conns := make(chan *quic.Conn, 16)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		sess, err := wt.Upgrade(w, r)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		qc := <-conns
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if s, err := sess.AcceptStream(ctx); err == nil {
			_, _ = s.Read(make([]byte, 1))
		}
		_ = qc.CloseWithError(code, "")
	})
	go func() {
		for {
			qc, err := ln.Accept(context.Background())
			if err != nil {
				return
			}
			conns <- qc
			go func() { _ = wt.ServeQUICConn(qc) }()
		}
	}()
	t.Cleanup(func() {
		wt.Close()
		ln.Close()
	})
	return ln.Addr().String()
}

// TestADialledWebTransportSessionLostToItsIdleTimeoutSaysSo: a dialled
// session whose peer falls silent ends with its QUIC connection's idle
// timeout, and its Cause says so in the type IdleTimedOut reads (the
// reconnect loop does not count such a connection as a failed attempt),
// not as webtransport-go's H3_DATAGRAM_ERROR carrying the timeout's text;
// so does a read it cut, whichever woke it first.
func TestADialledWebTransportSessionLostToItsIdleTimeoutSaysSo(t *testing.T) {
	t.Parallel()
	addr := wtServer(t, func(a Accepted) { <-a.Conn.Context().Done() })
	proxy, err := udpproxy.New(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u, err := url.Parse("https://" + proxy.Addr() + "/live/test")
	if err != nil {
		t.Fatal(err)
	}
	c, err := DialWebTransport[testErrors](ctx, u, proxy.Addr(), &tls.Config{InsecureSkipVerify: true}, []string{"moqt-16"}, 300*time.Millisecond, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(0, "")
	s, err := c.OpenBidi(ctx)
	if err == nil {
		_, err = s.Write([]byte("x"))
	}
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 1))
		read <- err
	}()
	proxy.Blackhole(true)
	select {
	case <-c.Context().Done():
	case <-ctx.Done():
		t.Fatal("the session outlived 20 s of silence")
	}
	if cause := c.Cause(); !IdleTimedOut(cause) {
		t.Errorf("the session lost to its idle timeout says %v (%T)", cause, cause)
	}
	if err := <-read; !IdleTimedOut(err) {
		t.Errorf("a read the idle timeout cut says %v (%T)", err, err)
	}
}
