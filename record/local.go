package record

import (
	"context"
	"fmt"
	"sync"

	"github.com/moq-export/moq-export/model"
)

// LocalSource serves broadcasts made in this process (no network): each
// is announced once, and the feed ends (ErrSourceClosed) when Close is
// called. Tests and in-process pipelines use it.
type LocalSource struct {
	mu   sync.Mutex
	bcs  map[string]*model.Broadcast
	done chan struct{}
	once sync.Once
}

// Local returns a LocalSource serving bcs by their names.
func Local(bcs ...*model.Broadcast) *LocalSource {
	s := &LocalSource{bcs: map[string]*model.Broadcast{}, done: make(chan struct{})}
	for _, b := range bcs {
		s.bcs[b.Name()] = b
	}
	return s
}

func (s *LocalSource) Broadcast(path string) *model.Broadcast {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.bcs[path]; ok {
		return b
	}
	b := model.NewBroadcast(path)
	b.Close(fmt.Errorf("broadcast %q: %w", path, model.ErrNotFound))
	return b
}

func (s *LocalSource) Announced(ctx context.Context) (Feed, error) {
	s.mu.Lock()
	var q []Announcement
	for name := range s.bcs {
		q = append(q, Announcement{Path: name, Active: true})
	}
	s.mu.Unlock()
	return &queuedFeed{done: s.done, queue: q}, nil
}

func (s *LocalSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	return nil, fmt.Errorf("broadcast reference %q: %w", ref, model.ErrNotFound)
}

// Close ends the announcement feeds.
func (s *LocalSource) Close() error {
	s.once.Do(func() { close(s.done) })
	return nil
}

// queuedFeed hands out the announcements it was given, then waits until
// its source is closed (done): the feed of a source whose broadcasts are
// all known when the feed starts (LocalSource, ArchiveSource).
type queuedFeed struct {
	done  <-chan struct{}
	queue []Announcement
}

func (f *queuedFeed) Next(ctx context.Context) (Announcement, error) {
	if len(f.queue) > 0 {
		a := f.queue[0]
		f.queue = f.queue[1:]
		return a, nil
	}
	select {
	case <-ctx.Done():
		return Announcement{}, context.Cause(ctx)
	case <-f.done:
		return Announcement{}, ErrSourceClosed
	}
}

func (f *queuedFeed) Close() {}
