package ietfpub

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// goneStream is a request stream as webtransport-go hands it over once the
// peer reset it with WT_SESSION_GONE: Read waits for the session's end or
// a read deadline, and CancelRead does not wake it.
type goneStream struct {
	mu       sync.Mutex
	deadline chan struct{}
	set      bool
}

func newGoneStream() *goneStream { return &goneStream{deadline: make(chan struct{})} }

func (s *goneStream) Read([]byte) (int, error) {
	<-s.deadline
	return 0, os.ErrDeadlineExceeded
}
func (s *goneStream) CancelRead(uint64) {}
func (s *goneStream) SetReadDeadline(time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.set {
		s.set = true
		close(s.deadline)
	}
	return nil
}
func (s *goneStream) Write(p []byte) (int, error) { return len(p), nil }
func (s *goneStream) Close() error                { return nil }
func (s *goneStream) CancelWrite(uint64)          {}

// quietConn is a moq-transport connection that carries nothing.
type quietConn struct{ ctx context.Context }

func (c quietConn) Draft() ietf.Version      { return ietf.Draft22 }
func (c quietConn) Context() context.Context { return c.ctx }
func (c quietConn) OpenUni(context.Context) (session.SendStream, error) {
	return nil, fs.ErrClosed
}
func (c quietConn) WriteControl(uint64, ietf.Message) error { return nil }
func (c quietConn) Grant(uint64)                            {}
func (c quietConn) Close(uint64, string)                    {}
func (c quietConn) Offer(string) (func(bool), error)        { return func(bool) {}, nil }

// TestARequestStreamThePeerResetAsItsSessionWentEndsWithTheRequest: a
// request on its own stream is answered (here refused), and the read that
// waits for the peer's end of that stream must end with the request,
// whatever the stream's Read does: a WebTransport publisher's Close waits
// for it (it waited for ever in the e2e matrix under load, accept role
// over WebTransport: a read parked by webtransport-go after
// WT_SESSION_GONE, which CancelRead does not wake).
func TestARequestStreamThePeerResetAsItsSessionWentEndsWithTheRequest(t *testing.T) {
	var wg sync.WaitGroup
	p := &Publisher{Pubs: session.NewPublications(), Log: slog.New(slog.DiscardHandler), Go: wg.Go}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sd := p.On(quietConn{ctx: ctx})
	str := newGoneStream()
	// A request id, then nothing this publisher serves.
	if err := sd.Request(str, str, 0x7f, []byte{4}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		// A deadlock, not a slow machine: nothing else wakes the read.
		t.Fatal(errors.New("the request's stream is still read 10 s after it was refused"))
	}
}
