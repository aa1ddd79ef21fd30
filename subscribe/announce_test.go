package subscribe

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/moq/lite/litesub"
	"github.com/moq-export/moq-export/internal/moq/lite/wire"
	"github.com/moq-export/moq-export/model"
)

// pipeBidi is an announce stream of a peer: the request comes from req,
// further reads block until CancelRead; writes go to out, or block until
// CancelWrite when stuck is set (a peer that does not read).
type pipeBidi struct {
	req   io.Reader
	stuck bool

	mu          sync.Mutex
	out         bytes.Buffer
	readCancel  chan struct{}
	writeCancel chan struct{}
	readCode    atomic.Int64 // code+1, 0 while not cancelled
	writeCode   atomic.Int64
	closed      atomic.Bool
}

func newPipeBidi(prefix string, stuck bool) *pipeBidi {
	req := wire.AnnounceRequest{Prefix: prefix}
	return &pipeBidi{req: bytes.NewReader(req.Append(nil)), stuck: stuck,
		readCancel: make(chan struct{}), writeCancel: make(chan struct{})}
}

func (p *pipeBidi) Read(b []byte) (int, error) {
	if n, err := p.req.Read(b); err == nil {
		return n, nil
	}
	<-p.readCancel
	return 0, errors.New("read cancelled")
}

func (p *pipeBidi) Write(b []byte) (int, error) {
	if p.stuck {
		<-p.writeCancel
		return 0, errors.New("write cancelled")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *pipeBidi) CancelRead(code uint64) {
	if p.readCode.CompareAndSwap(0, int64(code)+1) {
		close(p.readCancel)
	}
}

func (p *pipeBidi) CancelWrite(code uint64) {
	if p.writeCode.CompareAndSwap(0, int64(code)+1) {
		close(p.writeCancel)
	}
}

func (p *pipeBidi) Close() error                    { p.closed.Store(true); return nil }
func (p *pipeBidi) SetReadDeadline(time.Time) error { return nil }

// announced decodes what was written: ANNOUNCE_OK, then announcements.
func (p *pipeBidi) announced(t *testing.T) (wire.AnnounceOK, []wire.Announce) {
	t.Helper()
	p.mu.Lock()
	r := bufio.NewReader(bytes.NewReader(bytes.Clone(p.out.Bytes())))
	p.mu.Unlock()
	var ok wire.AnnounceOK
	if err := litesub.ReadMessage(r, &ok); err != nil {
		return ok, nil
	}
	var out []wire.Announce
	for {
		var m wire.Announce
		if err := litesub.ReadMessage(r, &m); err != nil {
			return ok, out
		}
		out = append(out, m)
	}
}

// TestPeerNotReadingItsAnnounceStreamBlocksNothing: a peer that never reads
// its announce stream neither blocks Publish nor the announcements of
// another stream, and its stream is reset (CodeTimeout) once a write has
// been stuck for the announce timeout.
func TestPeerNotReadingItsAnnounceStreamBlocksNothing(t *testing.T) {
	checkGoroutines(t)
	opts := Options{Logger: testLogger(t)}
	opts.announceTimeout = 200 * time.Millisecond
	s := newSession(opts, "")
	defer s.Close()
	if err := s.Publish(model.NewBroadcast("first")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	stuck, healthy := newPipeBidi("", true), newPipeBidi("", false)
	for _, str := range []*pipeBidi{stuck, healthy} {
		wg.Go(func() { s.pub.lite.ServeAnnounce(ctx, wire.Lite05, str, bufio.NewReader(str)) })
		// Unblocks everything when the test fails early.
		defer str.CancelWrite(CodeCancel)
	}
	waitFor(t, "both announce streams", func() bool {
		return s.pub.pubs.Followers() == 2
	})

	published := make(chan error, 1)
	go func() { published <- s.Publish(model.NewBroadcast("second")) }()
	select {
	case err := <-published:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Publish blocked by a peer that does not read its announce stream")
	}
	s.Unpublish("first")
	waitFor(t, "the healthy stream's announcements", func() bool {
		_, got := healthy.announced(t)
		return len(got) == 3
	})
	ok, got := healthy.announced(t)
	if ok.ActiveCount != 1 || got[0].Suffix != "first" || got[0].Status != wire.StatusActive ||
		got[1].Suffix != "second" || got[1].Status != wire.StatusActive ||
		got[2].Suffix != "first" || got[2].Status != wire.StatusEnded {
		t.Fatalf("healthy stream: %+v then %+v", ok, got)
	}
	waitFor(t, "the stuck stream's reset", func() bool {
		return stuck.writeCode.Load()-1 == CodeTimeout && stuck.readCode.Load()-1 == CodeTimeout
	})
	waitFor(t, "the stuck stream to be forgotten", func() bool {
		return s.pub.pubs.Followers() == 1
	})
	if healthy.writeCode.Load() != 0 || healthy.readCode.Load() != 0 {
		t.Fatal("the healthy stream was reset")
	}
}
