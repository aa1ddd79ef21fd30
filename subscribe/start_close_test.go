package subscribe

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
)

// goneConn is a connection that is already gone: every stream call fails
// and its context is done.
type goneConn struct {
	ctx    context.Context
	mu     sync.Mutex
	closed int
}

var errGone = errors.New("connection gone")

func newGoneConn() *goneConn {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errGone)
	return &goneConn{ctx: ctx}
}

func (c *goneConn) OpenBidi(context.Context) (bidiStream, error)   { return nil, errGone }
func (c *goneConn) OpenUni(context.Context) (sendStream, error)    { return nil, errGone }
func (c *goneConn) AcceptBidi(context.Context) (bidiStream, error) { return nil, errGone }
func (c *goneConn) AcceptUni(context.Context) (recvStream, error)  { return nil, errGone }
func (c *goneConn) Context() context.Context                       { return c.ctx }
func (c *goneConn) WebTransport() bool                             { return false }
func (c *goneConn) Silence() time.Duration                         { return time.Second }
func (c *goneConn) Close(uint64, string) {
	c.mu.Lock()
	c.closed++
	c.mu.Unlock()
}

// TestCloseBesideStartIsSafe: a server registers an accepted session
// before it starts it, so Server.Close can close a session while its
// start runs. Under -race this failed (WaitGroup Add beside Wait) before
// start checked for Close; a Close that wins closes the connection, and
// the session ends either way.
func TestCloseBesideStartIsSafe(t *testing.T) {
	for range 200 {
		sess := newSession(Options{}, "/")
		c := newGoneConn()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess.start(sess.newLite(c, litesub.Negotiated{}, nil))
		}()
		if err := sess.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		sess.wg.Wait()
		select {
		case <-sess.done:
		default:
			t.Fatal("session not done after Close")
		}
	}
}
