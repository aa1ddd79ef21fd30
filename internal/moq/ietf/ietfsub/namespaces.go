package ietfsub

import (
	"context"
	"fmt"
	"sort"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moqpath"
)

// Follow runs one announcement feed for prefix: SUBSCRIBE_NAMESPACE when
// ask, then the namespaces the peer publishes under it (answers to it, or
// unsolicited PUBLISH_NAMESPACE) go to reconcile, sorted, each time they
// change (first: the first time on this connection). Draft 15 defines no
// NAMESPACE message (its answers are PUBLISH_NAMESPACE requests, as in
// draft 14); NAMESPACE and NAMESPACE_DONE entries that a peer sends on the
// draft-15 control stream anyway (draft 16's shapes) count for the feed
// when it is the only one on the connection (routeNamespace). It returns
// nil when ctx ends, the connection's cause when it is gone, and
// ErrNoDiscovery at once when ask on a server known to offer no discovery.
func (s *Session) Follow(ctx context.Context, prefix string, ask bool, reconcile func(active []string, first bool)) error {
	if ask && s.server.NoDiscovery() {
		// A caller's feed has nothing to follow on a server known to
		// refuse namespace discovery: it ends, saying why.
		s.server.sayNoDiscovery(s.log)
		return ErrNoDiscovery
	}
	var (
		msgs  chan message
		ended chan struct{}
	)
	if ask {
		// Drafts 16+ answer on a stream of the request's own, with
		// NAMESPACE and NAMESPACE_DONE entries.
		req, err := s.newRequest(ctx, s.v.NamespaceStream())
		if err != nil {
			return err
		}
		s.mu.Lock()
		req.nsFeed = true
		s.mu.Unlock()
		defer s.endRequest(req)
		m := ietf.SubscribeNamespace{RequestID: req.id, Prefix: prefix, Options: 1}
		s.Asked.Discovery.Store(true)
		if err := req.send(ietf.SubscribeNamespaceType(s.v), &m); err != nil {
			return err
		}
		defer func() {
			if s.Context().Err() == nil && req.str == nil {
				req.cancel(ietf.TypeUnsubscribeNamespace)
			}
		}()
		msgs, ended = req.msgs, req.ended
	}
	cleanPrefix := moqpath.Clean(prefix)
	entries := map[string]bool{} // NAMESPACE entries of this request
	first := true
	for {
		if s.Context().Err() != nil {
			return s.c.Cause()
		}
		s.mu.Lock()
		var active []string
		for p := range s.peerNS {
			if _, ok := moqpath.CutPrefix(moqpath.Clean(p), cleanPrefix); ok {
				active = append(active, p)
			}
		}
		for p := range entries {
			if _, dup := s.peerNS[p]; !dup {
				active = append(active, p)
			}
		}
		ch := s.nsCh
		s.mu.Unlock()
		sort.Strings(active)
		reconcile(active, first)
		first = false
		select {
		case <-ch:
		case resp := <-msgs:
			s.Asked.DiscoveryAnswered.Store(true)
			switch resp.typ {
			case ietf.TypeSubscribeNamespaceErr, ietf.TypeRequestError:
				var re ietf.RequestError
				_ = ietf.Decode(resp.body, &re, s.v)
				s.log.Debug("moq: SUBSCRIBE_NAMESPACE refused; following unsolicited namespaces only", "prefix", prefix, "err", &re)
			case ietf.TypeNamespace, ietf.TypeNamespaceDone:
				if s.v.PerRequestResponses() {
					break // draft 14's PUBLISH_NAMESPACE_ERROR shares 0x08
				}
				var e ietf.Namespace
				if err := ietf.Decode(resp.body, &e, s.v); err != nil {
					return fmt.Errorf("NAMESPACE: %w", protocolErr(err))
				}
				p := moqpath.Join(cleanPrefix, moqpath.Clean(e.Suffix))
				if resp.typ == ietf.TypeNamespace {
					entries[p] = true
				} else {
					delete(entries, p)
				}
			}
		case <-ended:
			// The namespace subscription ended; unsolicited namespaces
			// still count.
			ended = nil
		case <-ctx.Done():
			return nil
		case <-s.Context().Done():
			return s.c.Cause()
		}
	}
}
