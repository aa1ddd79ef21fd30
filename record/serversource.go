package record

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// ServerSource is the Source of the publishers a subscribe.Server accepts
// (what `moq-export --listen` records): it accepts every session, follows
// what each announces, and serves each broadcast from the session that
// announced it. A broadcast's path is relative to its publisher's session
// root; when two publishers announce the same path, the later one's is
// recorded from then on.
//
// It starts accepting at the first Announced call and stops when Close is
// called (which closes the sessions) or the server closes. Options of the
// server (ServerOptions.AuthKey, MaxSessions) decide who may publish.
type ServerSource struct {
	srv *subscribe.Server

	mu       sync.Mutex
	started  bool
	stop     context.CancelFunc
	owner    map[string]*subscribe.Session // path -> the session that announced it
	sessions map[*subscribe.Session]bool
	feeds    map[*serverFeed]bool
	err      error // why accepting ended
	wg       sync.WaitGroup
}

// NewServerSource returns the Source of the sessions srv accepts. srv is
// not closed by it.
func NewServerSource(srv *subscribe.Server) *ServerSource {
	return &ServerSource{srv: srv, owner: map[string]*subscribe.Session{}, sessions: map[*subscribe.Session]bool{}, feeds: map[*serverFeed]bool{}}
}

// ErrNotAnnounced is the error of a broadcast no accepted publisher
// announced (ServerSource.Broadcast).
var ErrNotAnnounced = errors.New("no publisher announced this broadcast")

// Broadcast returns the broadcast at path from the session that announced
// it; one that no session announced is returned ended with
// ErrNotAnnounced.
func (s *ServerSource) Broadcast(path string) *model.Broadcast {
	s.mu.Lock()
	sess := s.owner[path]
	s.mu.Unlock()
	if sess == nil {
		b := model.NewBroadcast(path)
		b.Close(fmt.Errorf("broadcast %q: %w", path, ErrNotAnnounced))
		return b
	}
	return sess.Broadcast(path)
}

// Resolve resolves a catalog's reference within the session that
// announced b.
func (s *ServerSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	path, ok := subscribe.ResolveBroadcast(b.Name(), ref)
	if !ok {
		return nil, fmt.Errorf("broadcast reference %q leaves the session root", ref)
	}
	s.mu.Lock()
	sess := s.owner[b.Name()]
	s.mu.Unlock()
	if sess == nil {
		return nil, fmt.Errorf("broadcast %q: %w", b.Name(), ErrNotAnnounced)
	}
	return sess.Broadcast(path), nil
}

// Announced follows what every accepted publisher announces (and their
// broadcasts ending when a publisher leaves). The first call starts
// accepting.
func (s *ServerSource) Announced(ctx context.Context) (Feed, error) {
	f := &serverFeed{s: s, more: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, s.err
	}
	for path := range s.owner {
		f.queue = append(f.queue, Announcement{Path: path, Active: true})
	}
	s.feeds[f] = true
	if !s.started {
		s.started = true
		actx, stop := context.WithCancel(context.Background())
		s.stop = stop
		s.wg.Add(1)
		go s.accept(actx)
	}
	return f, nil
}

// Close stops accepting and closes the accepted sessions; their
// broadcasts end.
func (s *ServerSource) Close() error {
	s.mu.Lock()
	stop := s.stop
	if s.err == nil {
		s.err = ErrSourceClosed
	}
	for sess := range s.sessions {
		sess.Close()
	}
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	s.wg.Wait()
	s.wake()
	return nil
}

func (s *ServerSource) accept(ctx context.Context) {
	defer s.wg.Done()
	for {
		sess, err := s.srv.Accept(ctx)
		if err != nil {
			s.mu.Lock()
			if s.err == nil {
				s.err = fmt.Errorf("%w: %w", ErrSourceClosed, err)
			}
			s.mu.Unlock()
			s.wake()
			return
		}
		s.mu.Lock()
		closed := s.err != nil
		if !closed {
			s.sessions[sess] = true
		}
		s.mu.Unlock()
		if closed {
			sess.Close()
			return
		}
		s.wg.Add(1)
		go s.follow(ctx, sess)
	}
}

// follow passes sess's announcements on until it ends, then ends the
// broadcasts it still owned.
func (s *ServerSource) follow(ctx context.Context, sess *subscribe.Session) {
	defer s.wg.Done()
	an, err := sess.Announced(ctx, "")
	if err == nil {
		for {
			a, err := an.Next(ctx)
			if err != nil {
				break
			}
			s.mu.Lock()
			if a.Active {
				s.owner[a.Path] = sess
			} else if s.owner[a.Path] == sess {
				delete(s.owner, a.Path)
			} else {
				s.mu.Unlock()
				continue // another publisher's now
			}
			s.publish(Announcement{Path: a.Path, Active: a.Active})
			s.mu.Unlock()
		}
		an.Close()
	}
	s.mu.Lock()
	delete(s.sessions, sess)
	for path, o := range s.owner {
		if o == sess {
			delete(s.owner, path)
			s.publish(Announcement{Path: path})
		}
	}
	s.mu.Unlock()
	sess.Close()
}

// publish queues a on every feed; s.mu is held.
func (s *ServerSource) publish(a Announcement) {
	for f := range s.feeds {
		f.queue = append(f.queue, a)
		select {
		case f.more <- struct{}{}:
		default:
		}
	}
}

// wake tells every feed to look again (the source ended).
func (s *ServerSource) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range s.feeds {
		select {
		case f.more <- struct{}{}:
		default:
		}
	}
}

// serverFeed is one follower of a ServerSource's announcements.
type serverFeed struct {
	s     *ServerSource
	queue []Announcement // guarded by s.mu
	more  chan struct{}
}

func (f *serverFeed) Next(ctx context.Context) (Announcement, error) {
	for {
		f.s.mu.Lock()
		if len(f.queue) > 0 {
			a := f.queue[0]
			f.queue = f.queue[1:]
			f.s.mu.Unlock()
			return a, nil
		}
		err := f.s.err
		f.s.mu.Unlock()
		if err != nil {
			return Announcement{}, err
		}
		select {
		case <-f.more:
		case <-ctx.Done():
			return Announcement{}, ctx.Err()
		}
	}
}

func (f *serverFeed) Close() {
	f.s.mu.Lock()
	delete(f.s.feeds, f)
	f.s.mu.Unlock()
}
