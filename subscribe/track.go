package subscribe

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// A subscribed track is the session core's (session.Remote: its run and
// retries, resume and gap fill, backfill); the broadcast it belongs to is
// its host, and the connection's family speaks for it on the wire.

// prepare learns the container of track rt (kind when known already; a
// cmaf track's init) and sets its packaging; false closes the track.
func (rb *remoteBroadcast) prepare(rt *session.Remote, kind string) bool {
	log := rb.s.log
	if kind == "" {
		k, err := rb.kindOf(rt.Name)
		if err != nil {
			rt.Track.Close(session.CloseReason(err))
			return false
		}
		if !hang.Decodable(k) {
			log.Warn("moq: unsupported container, track skipped", "broadcast", rb.path, "track", rt.Name, "container", k)
			rt.Track.Close(fmt.Errorf("track %q: %w: %q", rt.Name, ErrUnsupportedContainer, k))
			return false
		}
		kind = k
	}
	pack, err := rb.packaging(rt.Name, kind)
	if err != nil {
		log.Warn("moq: "+kind+" track skipped", "broadcast", rb.path, "track", rt.Name, "err", err)
		rt.Track.Close(err)
		return false
	}
	rt.Pack = pack
	return true
}

// The broadcast is its tracks' host (session.RemoteHost).

func (rb *remoteBroadcast) Logger() *slog.Logger          { return rb.s.log }
func (rb *remoteBroadcast) Config() *session.RemoteConfig { return &rb.s.remoteCfg }
func (rb *remoteBroadcast) Context() context.Context      { return rb.ctx }
func (rb *remoteBroadcast) PendingStreams() int           { return rb.s.uniOrder.Load().Pending() }
func (rb *remoteBroadcast) AddLost(n uint64)              { rb.s.lostGroups.Add(n) }
func (rb *remoteBroadcast) Go(f func())                   { rb.s.wg.Go(f) }
func (rb *remoteBroadcast) Activated() <-chan struct{} {
	rb.mu.Lock()
	defer rb.mu.Unlock()
	return rb.activated
}

// WaitConn returns the family of the session's current connection once
// its generation differs from prev.
func (rb *remoteBroadcast) WaitConn(ctx context.Context, prev uint64) (session.Family, uint64, error) {
	f, gen, err := rb.s.links.WaitConn(ctx, prev)
	if err != nil {
		return nil, 0, err
	}
	return f, gen, nil
}

// LostGroups returns how many groups of the session's subscriptions were
// lost to connection outages: missed groups the peer no longer served
// after a reconnect, and one for each resume on a restarted publisher
// session (whose missed groups cannot be counted). Safe for concurrent use.
func (s *Session) LostGroups() uint64 { return s.lostGroups.Load() }
