package record

import (
	"context"
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
)

// ErrSourceClosed is returned by a Feed whose source ended.
var ErrSourceClosed = errors.New("the source ended")

// Source is where broadcasts come from: a relay session (SessionSource),
// publishers that connected to a listener, or broadcasts in this process.
type Source interface {
	// Broadcast returns the broadcast at path (relative to the source's
	// root).
	Broadcast(path string) *model.Broadcast
	// Announced follows the broadcasts announced.
	Announced(ctx context.Context) (Feed, error)
	// Resolve returns the broadcast a rendition's "broadcast" reference in
	// b's catalog names.
	Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error)
}

// Feed is a live list of announcements.
type Feed interface {
	// Next waits for the next change.
	Next(ctx context.Context) (Announcement, error)
	Close()
}

// Announcement is one broadcast starting (Active) or ending.
type Announcement struct {
	Path   string
	Active bool
}

// SessionSource is the Source of a moq-lite session (dialled with
// subscribe.Dial, or accepted by a subscribe.Server).
func SessionSource(s *subscribe.Session) Source { return sessionSource{s} }

type sessionSource struct{ s *subscribe.Session }

func (s sessionSource) Broadcast(path string) *model.Broadcast { return s.s.Broadcast(path) }

func (s sessionSource) Announced(ctx context.Context) (Feed, error) {
	a, err := s.s.Announced(ctx, "")
	if err != nil {
		return nil, err
	}
	return sessionFeed{a}, nil
}

func (s sessionSource) Resolve(b *model.Broadcast, ref string) (*model.Broadcast, error) {
	path, ok := subscribe.ResolveBroadcast(b.Name(), ref)
	if !ok {
		return nil, fmt.Errorf("broadcast reference %q leaves the session root", ref)
	}
	return s.s.Broadcast(path), nil
}

type sessionFeed struct{ a *subscribe.Announcements }

func (f sessionFeed) Next(ctx context.Context) (Announcement, error) {
	an, err := f.a.Next(ctx)
	if errors.Is(err, subscribe.ErrClosed) {
		err = ErrSourceClosed
	}
	return Announcement{Path: an.Path, Active: an.Active}, err
}

func (f sessionFeed) Close() { f.a.Close() }

// Err returns why the session ended (nil while it runs).
func (s sessionSource) Err() error { return s.s.Err() }

// Peer is the address of the publisher of an accepted session.
func (s sessionSource) Peer() string { return s.s.Remote() }

// peerOf names who publishes src's broadcasts, when the source knows.
func peerOf(src Source) string {
	if p, ok := src.(PeerSource); ok {
		return p.Peer()
	}
	return ""
}
