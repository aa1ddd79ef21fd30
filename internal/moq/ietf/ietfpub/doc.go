// Package ietfpub is our moq-transport publisher's wire: it reads the
// SUBSCRIBE, FETCH, TRACK_STATUS and SUBSCRIBE_NAMESPACE requests of a
// peer (on the control stream of drafts 14-16 or each on its own stream
// from draft 17), and writes the replies, subgroup and fetch streams and
// PUBLISH_NAMESPACE offers in the session's draft. What both families'
// publishers share is the session core's (package internal/moq/session):
// which broadcasts are published, the track a request names and its
// packaging, the loop that sends a subscription's groups in order
// (session.Serve, through this package's groupWriter) and the one that
// serves a fetched group (session.ServeGroup).
//
// It imports neither moq-lite's packages nor the transport: the
// moq-transport session it serves on is a Conn, and its streams are the
// core's stream interfaces. Package subscribe, the public facade, runs
// the session (SETUP, request ids, the control stream) and routes the
// peer's requests here.
package ietfpub

import (
	"context"
	"log/slog"
	"sync"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

// Codes this publisher sends.
const (
	codeNoError = 0x0 // session close: no error
	codeCancel  = 0x0 // stream reset: cancelled
)

// Publisher serves one session's publications over moq-transport. Its
// fields are set once, before it serves.
type Publisher struct {
	// Pubs are the session's publications (shared with its moq-lite
	// side, if any).
	Pubs *session.Publications
	Log  *slog.Logger
	// Go runs a serving goroutine that the session waits for when it
	// closes.
	Go func(func())
	// Strict, when not nil, is a server that behaves as MediaMTX does
	// (see Strict); Root is then the session root, which the namespaces
	// of SUBSCRIBE are taken relative to.
	Strict Strict
	Root   func() string
	// NoFetch refuses every FETCH (FETCH_ERROR, not supported), as a
	// publisher that serves none does: for testing what a subscriber
	// does without it.
	NoFetch bool
}

// Strict is a server that behaves as MediaMTX does with the requests it
// does not support: it announces nothing, closes the session on the
// requests Refuses names (and on unknown tracks), and counts what it
// closed on.
type Strict interface {
	// Refuses returns the name of a request of type typ (body in draft
	// v) that the server closes the session on, or "".
	Refuses(typ uint64, body []byte, v ietf.Version) string
	// Count counts a session closed on the request named what.
	Count(what string)
	// GroupPerFrame sends every frame as a group of its own, counted
	// from 0 per subscription, with no Largest Location.
	GroupPerFrame() bool
}

// Conn is the moq-transport session a Publisher serves on.
type Conn interface {
	// Draft is the session's draft.
	Draft() ietf.Version
	// Context is done when the session is gone.
	Context() context.Context
	OpenUni(ctx context.Context) (session.SendStream, error)
	// WriteControl sends one message on the control stream (drafts
	// 14-16).
	WriteControl(typ uint64, m ietf.Message) error
	// Grant keeps the peer's request id window open after it used id.
	Grant(id uint64)
	// Close closes the session.
	Close(code uint64, reason string)
	// Offer offers namespace ns with PUBLISH_NAMESPACE; end ends the
	// offer, with PUBLISH_NAMESPACE_DONE where the draft has it when
	// withdraw is set (the broadcast was unpublished).
	Offer(ns string) (end func(withdraw bool), err error)
}

// Served is what a Publisher serves on one connection: the requests of
// its peer, by id.
type Served struct {
	p *Publisher
	c Conn
	v ietf.Version

	mu     sync.Mutex
	serves map[uint64]*serve
}

// On returns what p serves on c.
func (p *Publisher) On(c Conn) *Served {
	return &Served{p: p, c: c, v: c.Draft(), serves: map[uint64]*serve{}}
}
