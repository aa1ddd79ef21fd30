package cli

import (
	"context"
	"fmt"
	"sync"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// Source is where broadcasts come from: a relay or publisher session, a
// publisher that connected to --listen, or the built-in demo.
type Source interface {
	record.Source
	// Reconnects counts the connections lost and made again.
	Reconnects() int64
	// Close ends the source.
	Close() error
}

// Feeds and announcements are package record's.
type (
	Feed         = record.Feed
	Announcement = record.Announcement
)

// localSource serves model broadcasts in this process (no network). It
// backs the built-in demo when the QUIC session is not wanted (library
// tests) and lets tests of the command run without sockets.
type localSource struct {
	mu   sync.Mutex
	bcs  map[string]*model.Broadcast
	done chan struct{}
	once sync.Once
}

func newLocalSource(bcs ...*model.Broadcast) *localSource {
	s := &localSource{bcs: map[string]*model.Broadcast{}, done: make(chan struct{})}
	for _, b := range bcs {
		s.bcs[b.Name()] = b
	}
	return s
}

func (s *localSource) Broadcast(path string) *model.Broadcast {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bcs[path]; ok {
		return b
	}
	b := model.NewBroadcast(path)
	b.Close(fmt.Errorf("broadcast %q: %w", path, model.ErrNotFound))
	return b
}

func (s *localSource) Announced(ctx context.Context) (Feed, error) {
	s.mu.Lock()
	var q []Announcement
	for name := range s.bcs {
		q = append(q, Announcement{Path: name, Active: true})
	}
	s.mu.Unlock()
	return &localFeed{s: s, queue: q}, nil
}

func (s *localSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	return nil, fmt.Errorf("broadcast reference %q: %w", ref, model.ErrNotFound)
}

func (s *localSource) Reconnects() int64 { return 0 }
func (s *localSource) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}

type localFeed struct {
	s     *localSource
	queue []Announcement
}

func (f *localFeed) Next(ctx context.Context) (Announcement, error) {
	if len(f.queue) > 0 {
		a := f.queue[0]
		f.queue = f.queue[1:]
		return a, nil
	}
	select {
	case <-ctx.Done():
		return Announcement{}, context.Cause(ctx)
	case <-f.s.done:
		return Announcement{}, record.ErrSourceClosed
	}
}

func (f *localFeed) Close() {}

// firstCatalog waits for the first catalog snapshot of b.
var firstCatalog = record.FirstCatalog
