package ietfsub

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/moq-export/moq-export/internal/moq/ietf"
)

// TestALessonAnotherSessionLearntFirstStillExplainsTheClose: sessions to
// one server run in parallel (a record-all, the MediaMTX rows of e2e).
// When a connection is closed with a request left unanswered that the
// server is already known to close the session on, that request explains
// the close, even though the lesson is not new: the catalog track asked
// beside it is not taken for one the server lacks. Before, it was, and
// every later session refused the track the server has.
func TestALessonAnotherSessionLearntFirstStillExplainsTheClose(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	cases := []struct {
		name  string
		v     ietf.Version
		ask   func(s *Session)
		known func(c *Server)
	}{
		{"discovery unanswered, no discovery already known", ietf.Draft18,
			func(s *Session) { s.Asked.Discovery.Store(true) },
			func(c *Server) { c.noDiscovery.Store(true) }},
		{"fetch unanswered, no fetch already known", ietf.Draft18,
			func(s *Session) { s.Asked.Fetch.Store(true) },
			func(c *Server) { c.noFetch.Store(true) }},
		{"draft 17's layout, draft 18's already known", ietf.Draft17,
			func(*Session) {},
			func(c *Server) { c.layout18.Store(true) }},
		{"optional parameters unanswered, minimal already known", ietf.Draft18,
			func(s *Session) { s.Asked.Optional.Store(true) },
			func(c *Server) { c.minimalParams.Store(true) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Server{}
			tc.known(c)
			s := New(nil, Config{Draft: tc.v, Client: true, Log: log})
			tc.ask(s)
			s.Asked.CatalogAsked("", ".catalog", false)
			if c.Learn(s, log) {
				t.Error("learnt something new from a lesson already known")
			}
			if c.closesOn("", ".catalog") {
				t.Error("the catalog track asked beside it was taken for one the server lacks")
			}
		})
	}
	// Alone, an unanswered catalog SUBSCRIBE is what closed the session.
	c := &Server{}
	s := New(nil, Config{Draft: ietf.Draft18, Client: true, Log: log})
	s.Asked.CatalogAsked("", "catalog.json", false)
	if !c.Learn(s, log) || !c.closesOn("", "catalog.json") {
		t.Error("a catalog SUBSCRIBE left alone unanswered was not learnt")
	}
}

// TestADraft16SetupClosedIsRetriedOnceTheLayoutIsKnown: a draft-16 SETUP
// in its own layout that the server closes (code 0) is worth one more try
// in draft 18's layout, also when another session to the server learnt
// that layout first; a SETUP already in draft 18's layout is not.
func TestADraft16SetupClosedIsRetriedOnceTheLayoutIsKnown(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	closed := errors.New("the peer closed the session (code 0)")
	for _, tc := range []struct {
		name     string
		known    bool
		layout18 bool
		want     bool
	}{
		{"the layout learnt here", false, false, true},
		{"the layout learnt by another session first", true, false, true},
		{"the SETUP already in draft 18's layout", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Server{}
			c.layout18.Store(tc.known)
			err := &SetupError{Draft: ietf.Draft16, Layout18: tc.layout18, Err: closed}
			if got := c.LearnSetup(err, true, log); got != tc.want {
				t.Errorf("LearnSetup = %v, want %v", got, tc.want)
			}
			if !c.layout18.Load() {
				t.Error("the layout is not known after")
			}
		})
	}
	// Another end of the SETUP (a timeout, a close with a code) teaches
	// nothing.
	c := &Server{}
	if c.LearnSetup(&SetupError{Draft: ietf.Draft16, Err: closed}, false, log) || c.Layout18() {
		t.Error("a SETUP that the peer did not end with code 0 taught the layout")
	}
	// Nor does a SETUP of a draft MediaMTX does not speak so.
	if c.LearnSetup(&SetupError{Draft: ietf.Draft18, Err: closed}, true, log) || c.Layout18() {
		t.Error("a draft-18 SETUP taught the layout")
	}
}
