package subscribe

import (
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
		ask   func(ic *ietfConn)
		known func(c *serverCompat)
	}{
		{"discovery unanswered, no discovery already known", ietf.Draft18,
			func(ic *ietfConn) { ic.ss.Asked.Discovery.Store(true) },
			func(c *serverCompat) { c.noDiscovery.Store(true) }},
		{"fetch unanswered, no fetch already known", ietf.Draft18,
			func(ic *ietfConn) { ic.ss.Asked.Fetch.Store(true) },
			func(c *serverCompat) { c.noFetch.Store(true) }},
		{"draft 17's layout, draft 18's already known", ietf.Draft17,
			func(*ietfConn) {},
			func(c *serverCompat) { c.layout18.Store(true) }},
		{"optional parameters unanswered, minimal already known", ietf.Draft18,
			func(ic *ietfConn) { ic.ss.Asked.Optional.Store(true) },
			func(c *serverCompat) { c.minimalParams.Store(true) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &serverCompat{}
			tc.known(c)
			ic := newIETFConn(nil, tc.v, false, true, log, nil)
			tc.ask(ic)
			ic.ss.Asked.CatalogAsked("", ".catalog", false)
			if c.learn(ic, log) {
				t.Error("learnt something new from a lesson already known")
			}
			if c.closesOn("", ".catalog") {
				t.Error("the catalog track asked beside it was taken for one the server lacks")
			}
		})
	}
	// Alone, an unanswered catalog SUBSCRIBE is what closed the session.
	c := &serverCompat{}
	ic := newIETFConn(nil, ietf.Draft18, false, true, log, nil)
	ic.ss.Asked.CatalogAsked("", "catalog.json", false)
	if !c.learn(ic, log) || !c.closesOn("", "catalog.json") {
		t.Error("a catalog SUBSCRIBE left alone unanswered was not learnt")
	}
}

// TestADraft16SetupClosedIsRetriedOnceTheLayoutIsKnown: a draft-16 SETUP
// in its own layout that the server closes (code 0) is worth one more try
// in draft 18's layout, also when another session to the server learnt
// that layout first; a SETUP already in draft 18's layout is not.
func TestADraft16SetupClosedIsRetriedOnceTheLayoutIsKnown(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	closed := &CloseError{Code: 0, Remote: true}
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
			c := &serverCompat{}
			c.layout18.Store(tc.known)
			err := &setupError{v: ietf.Draft16, layout18: tc.layout18, err: closed}
			if got := c.learnSetup(err, log); got != tc.want {
				t.Errorf("learnSetup = %v, want %v", got, tc.want)
			}
			if !c.layout18.Load() {
				t.Error("the layout is not known after")
			}
		})
	}
}
