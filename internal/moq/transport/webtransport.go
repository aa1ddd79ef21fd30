package transport

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/webtransport-go"
)

// wtConn is a WebTransport session.
type wtConn[E Errors] struct {
	s *webtransport.Session
	// remote is the peer's address.
	remote string
	// onClose runs after the session is closed (closes a dialled QUIC
	// connection's transport).
	onClose func()
	// quic is a dialled session's QUIC connection (nil: accepted).
	quic *quic.Conn
}

func (w *wtConn[E]) OpenBidi(ctx context.Context) (Stream, error) {
	s, err := w.s.OpenStreamSync(ctx)
	if err != nil {
		return nil, w.mapErr(err)
	}
	return wtStream[E]{s, w, w.untilGone(s)}, nil
}

func (w *wtConn[E]) OpenUni(ctx context.Context) (SendStream, error) {
	s, err := w.s.OpenUniStreamSync(ctx)
	if err != nil {
		return nil, w.mapErr(err)
	}
	return wtSend[E]{s, w}, nil
}

func (w *wtConn[E]) AcceptBidi(ctx context.Context) (Stream, error) {
	s, err := w.s.AcceptStream(ctx)
	if err != nil {
		return nil, w.mapErr(err)
	}
	return wtStream[E]{s, w, w.untilGone(s)}, nil
}

func (w *wtConn[E]) AcceptUni(ctx context.Context) (RecvStream, error) {
	s, err := w.s.AcceptUniStream(ctx)
	if err != nil {
		return nil, w.mapErr(err)
	}
	return wtRecv[E]{s, w, w.untilGone(s)}, nil
}

// mapErr is mapErr for a call on the session or one of its streams. Once
// the session has ended, a call it cut can fail with what followed the
// end rather than with the end: the read deadline untilGone sets (an
// "i/o timeout"); the close of the QUIC connection that webtransport-go
// makes as soon as a dialled session's context is done (HTTP/3's
// H3_NO_ERROR, 0x100, locally); or the session's own report of its end
// with its connection (an HTTP/3 error with the connection's error in
// words). quic-go reports the connection's close before the stream's
// cancellation to a Read woken by both, so a reader whose goroutine ran
// late (a loaded machine) read a peer's close of the session as our own
// close: a moq-transport-16 SETUP that MediaMTX's profile ends to show
// its layout was not tried again (#26). Such an error is the session's
// own end, as Cause says it (a close, or a dialled session's idle
// timeout).
func (w *wtConn[E]) mapErr(err error) error {
	if err == nil || err == io.EOF {
		return err
	}
	if w.s.Context().Err() != nil && (errors.Is(err, os.ErrDeadlineExceeded) || closedLocally(err) || isH3Error(err)) {
		if cause := w.Cause(); IsConnErr[E](cause) {
			return cause
		}
	}
	return mapWTErr[E](err)
}

// closedLocally reports whether err is the close of a QUIC connection by
// this side, with an application code.
func closedLocally(err error) bool {
	ae, ok := errors.AsType[*quic.ApplicationError](err)
	return ok && !ae.Remote
}

// isH3Error reports whether err is an HTTP/3 error: how webtransport-go
// says that a session ended with its CONNECT stream (the QUIC
// connection's end in words only), to a stream the session's end
// cancelled before the connection's end reached it.
func isH3Error(err error) bool {
	_, ok := errors.AsType[*http3.Error](err)
	return ok
}

// untilGone ends a stream's reads when the session is gone. webtransport-go
// v0.13.0 can leave a Read blocked for good after the session closed: a
// Read that met the peer's WT_SESSION_GONE reset waits for the session to
// close the stream, which it no longer does once a CancelRead has taken
// the stream off its list. A read deadline wakes it. The returned func
// forgets the stream (called when its reads are over).
func (w *wtConn[E]) untilGone(s interface{ SetReadDeadline(time.Time) error }) func() bool {
	return context.AfterFunc(w.s.Context(), func() { _ = s.SetReadDeadline(time.Now()) })
}

func (w *wtConn[E]) Close(code uint64, reason string) {
	_ = w.s.CloseWithError(webtransport.SessionErrorCode(code), reason)
	if w.onClose != nil {
		w.onClose()
	}
}
func (w *wtConn[E]) Context() context.Context { return w.s.Context() }
func (w *wtConn[E]) WebTransport() bool       { return true }
func (w *wtConn[E]) Protocol() string         { return w.s.SessionState().ApplicationProtocol }
func (w *wtConn[E]) RemoteAddr() string       { return w.remote }

// Cause returns the error the session was closed with (who closed it,
// with which code): webtransport-go cancels the session's context without
// a cause, but its stream calls return that error once the session is
// closed.
func (w *wtConn[E]) Cause() error {
	err := context.Cause(w.s.Context())
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) {
		done, cancel := context.WithCancel(context.Background())
		cancel()
		if _, aerr := w.s.AcceptUniStream(done); aerr != nil && !errors.Is(aerr, context.Canceled) {
			serr := mapWTErr[E](aerr)
			var e E
			if e.IsClosed(serr) || w.quic == nil {
				return serr
			}
			// The session ended with its QUIC connection (an idle
			// timeout, the peer's close of the connection), which
			// webtransport-go says only in the text of an
			// H3_DATAGRAM_ERROR: the connection's own error says it in
			// its type (IdleTimedOut, a close's code). quic-go ends
			// the streams before the connection's context, and
			// webtransport-go closes a dialled session's connection
			// once the session ended: its end is due at once.
			select {
			case <-w.quic.Context().Done():
			case <-time.After(time.Second):
				return serr
			}
			if qerr := context.Cause(w.quic.Context()); qerr != nil && !closedLocally(qerr) {
				return mapWTErr[E](qerr)
			}
			return serr
		}
	}
	return mapWTErr[E](err)
}

type wtStream[E Errors] struct {
	s    *webtransport.Stream
	c    *wtConn[E]
	stop func() bool // see untilGone
}

func (w wtStream[E]) Read(b []byte) (int, error) {
	n, err := w.s.Read(b)
	if err != nil {
		w.stop()
	}
	return n, w.c.mapErr(err)
}
func (w wtStream[E]) Write(b []byte) (int, error) {
	n, err := w.s.Write(b)
	return n, w.c.mapErr(err)
}
func (w wtStream[E]) Close() error { return w.s.Close() }
func (w wtStream[E]) CancelRead(code uint64) {
	w.s.CancelRead(webtransport.StreamErrorCode(code))
	w.stop()
}
func (w wtStream[E]) CancelWrite(code uint64)           { w.s.CancelWrite(webtransport.StreamErrorCode(code)) }
func (w wtStream[E]) SetReadDeadline(t time.Time) error { return w.s.SetReadDeadline(t) }

type wtSend[E Errors] struct {
	s *webtransport.SendStream
	c *wtConn[E]
}

func (w wtSend[E]) Write(b []byte) (int, error) {
	n, err := w.s.Write(b)
	return n, w.c.mapErr(err)
}
func (w wtSend[E]) Close() error            { return w.s.Close() }
func (w wtSend[E]) CancelWrite(code uint64) { w.s.CancelWrite(webtransport.StreamErrorCode(code)) }

type wtRecv[E Errors] struct {
	s    *webtransport.ReceiveStream
	c    *wtConn[E]
	stop func() bool // see untilGone
}

func (w wtRecv[E]) Read(b []byte) (int, error) {
	n, err := w.s.Read(b)
	if err != nil {
		w.stop()
	}
	return n, w.c.mapErr(err)
}
func (w wtRecv[E]) CancelRead(code uint64) {
	w.s.CancelRead(webtransport.StreamErrorCode(code))
	w.stop()
}
func (w wtRecv[E]) SetReadDeadline(t time.Time) error { return w.s.SetReadDeadline(t) }

// StreamID is the stream's QUIC stream ID: webtransport-go hands streams
// over in the order their headers were read, on a goroutine each, which is
// not the order the peer opened them (session.StreamOrder orders by it).
func (w wtRecv[E]) StreamID() uint64 { return uint64(w.s.StreamID()) }

// DialWebTransport opens a WebTransport session to u (its scheme is
// replaced by https and its user info dropped), offering protocols
// (WT-Available-Protocols) and connecting to hostport whatever port u
// names (a URL without a port reaches the default one). tc is the client
// TLS configuration (its NextProtos are replaced by h3).
func DialWebTransport[E Errors](ctx context.Context, u *url.URL, hostport string, tc *tls.Config, protocols []string, keepAlive, idle time.Duration) (Conn, error) {
	tc = tc.Clone()
	tc.NextProtos = []string{http3.NextProtoH3}
	// When the QUIC handshake completed (the dial is early: the CONNECT
	// may go before), for a CONNECT the idle timeout cuts
	// (HandshakeDoneError).
	began := time.Now()
	var shook atomic.Int64
	var qconn *quic.Conn // set by DialAddr, which tr.Dial calls before it returns
	tr := &webtransport.Transport{
		TLSClientConfig:      tc,
		QUICConfig:           QUICConfig(keepAlive, idle),
		ApplicationProtocols: protocols,
		DialAddr: func(ctx context.Context, _ string, tc *tls.Config, qc *quic.Config) (*quic.Conn, error) {
			c, err := dialQUIC(ctx, hostport, tc, qc, true)
			if err == nil {
				qconn = c
				go func() {
					select {
					case <-c.HandshakeComplete():
						shook.Store(int64(time.Since(began)))
					case <-c.Context().Done():
					}
				}()
			}
			return c, err
		},
	}
	cp := *u
	cp.Scheme = "https"
	cp.User = nil
	rsp, s, err := tr.Dial(ctx, cp.String(), http.Header{})
	if err != nil {
		tr.Close()
		if rsp != nil {
			return nil, fmt.Errorf("moq: WebTransport to %s: status %d: %w", redactURL(&cp), rsp.StatusCode, mapWTErr[E](err))
		}
		err = fmt.Errorf("moq: WebTransport to %s: %w", redactURL(&cp), mapWTErr[E](err))
		if took := time.Duration(shook.Load()); took > 0 {
			err = &HandshakeDoneError{Took: took, Err: err}
		}
		return nil, err
	}
	return &wtConn[E]{s: s, remote: hostport, onClose: func() { tr.Close() }, quic: qconn}, nil
}
