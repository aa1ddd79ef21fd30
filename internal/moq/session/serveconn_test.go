package session

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"
)

// pipeStream is a stream of a test connection: reads block until its
// deadline passes or it is cancelled.
type pipeStream struct {
	n        int
	mu       sync.Mutex
	deadline chan struct{}
	woke     bool
}

func newPipeStream(n int) *pipeStream { return &pipeStream{n: n, deadline: make(chan struct{})} }

func (s *pipeStream) Read([]byte) (int, error) { <-s.deadline; return 0, io.EOF }
func (s *pipeStream) Write(p []byte) (int, error) {
	return len(p), nil
}
func (s *pipeStream) Close() error       { return nil }
func (s *pipeStream) CancelRead(uint64)  {}
func (s *pipeStream) CancelWrite(uint64) {}
func (s *pipeStream) SetReadDeadline(time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.woke {
		s.woke = true
		close(s.deadline)
	}
	return nil
}

// chanConn is a test connection whose peer opens the streams sent on its
// channels; Close records its code and ends the connection.
type chanConn struct {
	ctx    context.Context
	cancel context.CancelFunc
	uni    chan *pipeStream
	bidi   chan *pipeStream
	closed chan uint64
}

func newChanConn() *chanConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &chanConn{ctx: ctx, cancel: cancel, uni: make(chan *pipeStream), bidi: make(chan *pipeStream), closed: make(chan uint64, 1)}
}

func (c *chanConn) OpenBidi(context.Context) (Stream, error)    { return nil, errors.New("not here") }
func (c *chanConn) OpenUni(context.Context) (SendStream, error) { return nil, errors.New("not here") }
func (c *chanConn) AcceptBidi(ctx context.Context) (Stream, error) {
	select {
	case s := <-c.bidi:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c *chanConn) AcceptUni(ctx context.Context) (RecvStream, error) {
	select {
	case s := <-c.uni:
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (c *chanConn) Close(code uint64, _ string) {
	select {
	case c.closed <- code:
	default:
	}
	c.cancel()
}
func (c *chanConn) Context() context.Context           { return c.ctx }
func (c *chanConn) WebTransport() bool                 { return false }
func (c *chanConn) Cause() error                       { return nil }
func (c *chanConn) Gone(error) bool                    { return c.ctx.Err() != nil }
func (c *chanConn) ResetCode(error) (uint64, bool)     { return 0, false }
func (c *chanConn) Silence() time.Duration             { return time.Second }
func (c *chanConn) CloseOf(error) (uint64, bool, bool) { return 0, false, false }

// TestServeConnServesAConnectionsStreamsAndLoopsUntilItEnds: the uni
// streams the peer opens reach the family in acceptance order, each with
// its ticket, the bidi streams too, and the family's loops run. When the
// connection goes, ServeConn returns once every loop and handler has,
// and closes nothing; when the session ends first, it closes the
// connection with the family's code.
func TestServeConnServesAConnectionsStreamsAndLoopsUntilItEnds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		sessionEnds bool
	}{
		{"the connection goes", false},
		{"the session ends first", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newChanConn()
			sess, end := context.WithCancel(context.Background())
			defer end()
			order := &StreamOrder{}
			var mu sync.Mutex
			var unis, bidis []int
			var loopRan, loopDone bool
			handled := make(chan struct{}, 8)
			done := make(chan struct{})
			go func() {
				defer close(done)
				ServeConn(sess, c, 42, order,
					func(str RecvStream, tk OrderTicket) {
						mu.Lock()
						unis = append(unis, str.(*pipeStream).n)
						mu.Unlock()
						if n := str.(*pipeStream).n; tk.o != order || tk.n != uint64(n) {
							t.Errorf("uni stream %d: ticket %d of order %p, want ticket %d of %p (acceptance order)", n, tk.n, tk.o, n, order)
						}
						handled <- struct{}{}
						io.ReadAll(str) // held until the connection ends
					},
					func(str Stream) {
						mu.Lock()
						bidis = append(bidis, str.(*pipeStream).n)
						mu.Unlock()
						handled <- struct{}{}
						io.ReadAll(str)
					},
					func() {
						mu.Lock()
						loopRan = true
						mu.Unlock()
						<-c.ctx.Done()
						mu.Lock()
						loopDone = true
						mu.Unlock()
					})
			}()
			for i := range 3 {
				c.uni <- newPipeStream(i)
			}
			c.bidi <- newPipeStream(10)
			for range 4 {
				<-handled
			}
			if tc.sessionEnds {
				end()
			} else {
				c.cancel()
			}
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ServeConn did not return after the end")
			}
			mu.Lock()
			defer mu.Unlock()
			if len(unis) != 3 || len(bidis) != 1 || bidis[0] != 10 || !loopRan || !loopDone {
				t.Fatalf("uni %v, bidi %v, loop ran %v and returned %v: want 3 uni, the bidi stream and the loop through", unis, bidis, loopRan, loopDone)
			}
			if n := order.Pending(); n != 0 {
				t.Errorf("%d streams still pending in the order after the end", n)
			}
			select {
			case code := <-c.closed:
				if !tc.sessionEnds || code != 42 {
					t.Errorf("connection closed with %d (session ended: %v)", code, tc.sessionEnds)
				}
			default:
				if tc.sessionEnds {
					t.Error("the session ended and the connection was not closed")
				}
			}
		})
	}
}
