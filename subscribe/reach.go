package subscribe

import (
	"context"
	"time"

	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moq/transport"
)

// Noticing at once that a lost peer answers again.
//
// The redial backoff (Options.Reconnect) keeps a fleet of recorders from
// hammering a relay that is down or refusing them, but after a long
// outage it has grown to its cap (10 s), and a dial in flight when the
// network comes back may sit between handshake retransmissions for
// seconds: a peer's return was noticed up to ~14 s late. So while a redial
// run lasts, the session also probes its peer every 0.5-1 s (random, so
// that recorders that lost the same relay spread out) with a datagram any
// QUIC server answers statelessly (transport.Prober: no handshake, no
// state, nothing to the relay while it is down). When a probe is answered
// after one that was not, the wait for the next dial ends and a dial that
// started while the peer was silent starts afresh. A peer that answers
// every probe but fails the dials (refusing, overloaded) gives no such
// edge, so the backoff alone paces those dials.

// probeInterval is the longest time between two probes; each waits a
// random time in [probeInterval/2, probeInterval].
const probeInterval = time.Second

// watchReach probes the current target until stop (the core's redial
// loop runs it while a redial run lasts): back receives a value each time
// the peer answers after a probe that went unanswered.
func (s *Session) watchReach(ctx context.Context) (back <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch, done := make(chan struct{}, 1), make(chan struct{})
	hostport := s.target.Load().HostPort
	go func() {
		defer close(done)
		p, err := transport.NewProber(hostport)
		if err != nil {
			s.log.Debug("moq: cannot probe the peer; redials follow the backoff only", "err", err)
			return
		}
		defer p.Close()
		silent := false
		for ctx.Err() == nil {
			wait := session.Jitter(probeInterval)
			began := time.Now()
			if !p.Probe(ctx, wait) {
				silent = true
				continue
			}
			if silent {
				s.log.Info("moq: the peer answers again; reconnecting now")
				select {
				case ch <- struct{}{}:
				default:
				}
			}
			silent = false
			timer := time.NewTimer(time.Until(began.Add(wait)))
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
			timer.Stop()
		}
	}()
	return ch, func() {
		cancel()
		<-done
	}
}
