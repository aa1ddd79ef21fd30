package subscribe

import (
	"context"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// The publisher side of a moq-transport session is package ietfpub's
// (internal/moq/ietf/ietfpub): the session hands it the peer's requests
// (serveIETF, ietfControl, handleIETFBidi) and serves it the connection
// through ietfPubConn.

// ietfPubConn is a moq-transport session as package ietfpub serves on it.
type ietfPubConn struct{ ic *ietfConn }

func (a ietfPubConn) Draft() ietf.Version      { return a.ic.v }
func (a ietfPubConn) Context() context.Context { return a.ic.Context() }
func (a ietfPubConn) OpenUni(ctx context.Context) (session.SendStream, error) {
	return a.ic.OpenUni(ctx)
}
func (a ietfPubConn) WriteControl(typ uint64, m ietf.Message) error { return a.ic.writeControl(typ, m) }
func (a ietfPubConn) Grant(id uint64)                               { a.ic.grant(id) }
func (a ietfPubConn) Close(code uint64, reason string)              { a.ic.Close(code, reason) }

// Offer offers ns with PUBLISH_NAMESPACE, a request of ours.
func (a ietfPubConn) Offer(ns string) (func(withdraw bool), error) {
	ic := a.ic
	req, err := ic.newRequest(ic.Context(), false)
	if err != nil {
		return nil, err
	}
	if err := req.send(ietf.TypePublishNamespace, &ietf.PublishNamespace{RequestID: req.id, Namespace: ns}); err != nil {
		ic.endRequest(req)
		return nil, err
	}
	return func(withdraw bool) {
		if withdraw && req.str == nil {
			m := ietf.PublishNamespaceDone{Namespace: ns, RequestID: req.id}
			_ = ic.writeControl(ietf.TypePublishNamespaceDone, &m)
		}
		ic.endRequest(req)
	}, nil
}

// strictServer is ServerOptions.Strict as package ietfpub asks it.
type strictServer struct{ p *strictPeer }

func (x strictServer) Refuses(typ uint64, body []byte, v ietf.Version) string {
	return x.p.refuses(typ, body, v)
}
func (x strictServer) Count(what string)   { x.p.count(what) }
func (x strictServer) GroupPerFrame() bool { return x.p.groupPerFrame }
