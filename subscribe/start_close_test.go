package subscribe

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/moq-export/moq-export/subscribe/internal/wire"
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
func (c *goneConn) Version() *wire.Version                         { return nil }
func (c *goneConn) SessionStream() bidiStream                      { return nil }
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
			sess.start(c)
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

// TestListenSocketsNeedsBothTwins: the fingerprint bootstrap serves on the
// QUIC port's TCP twin; an explicit port whose TCP side is taken is an
// error that says so, and port 0 finds a port free on both.
func TestListenSocketsNeedsBothTwins(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	if udp, tcp, err := listenSockets(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}, true); err == nil {
		udp.Close()
		tcp.Close()
		t.Fatalf("port %d: both sockets bound although its TCP side is taken", port)
	} else if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), "fingerprint") {
		t.Fatalf("port %d: %v", port, err)
	}
	for range 50 {
		udp, tcp, err := listenSockets(&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)}, true)
		if err != nil {
			t.Fatal(err)
		}
		if u, l := udp.LocalAddr().(*net.UDPAddr).Port, tcp.Addr().(*net.TCPAddr).Port; u != l {
			t.Errorf("UDP port %d, TCP port %d", u, l)
		}
		udp.Close()
		tcp.Close()
	}
}
