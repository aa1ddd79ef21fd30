package token

import (
	"errors"
	"testing"
	"time"
)

func TestPublishAndSubscribePatternsGrantExactlyWhatTheySay(t *testing.T) {
	for _, tc := range []struct {
		name     string
		root     string
		pub, sub Paths
		at       string   // the connection path
		allowPub []string // broadcast paths relative to at
		denyPub  []string
		allowSub []string
		denySub  []string
	}{
		{name: "ALiteralIsOneBroadcast", root: "demo", pub: Paths{"alice"}, at: "demo",
			allowPub: []string{"alice", "/alice/"}, denyPub: []string{"alice/hd", "alicex", "bob", ""}},
		{name: "ASubtreeIsTheRoomAndBeneath", root: "", pub: Paths{"room/**"}, sub: Paths{"**"}, at: "",
			allowPub: []string{"room", "room/alice", "room/a/b"}, denyPub: []string{"rooms", "lobby/room"},
			allowSub: []string{"", "anything/at/all"}},
		{name: "AStarIsOneSegment", root: "pid", sub: Paths{"*/chat"}, at: "pid",
			allowSub: []string{"room1/chat", "room2/chat"}, denySub: []string{"chat", "a/b/chat", "room1/chat/x"}},
		{name: "APartialSegment", root: "", pub: Paths{"live/cam-*-hd"}, at: "live",
			allowPub: []string{"cam-1-hd", "cam--hd"}, denyPub: []string{"cam-1-sd", "cam-hd", "cam-1-hd/x"}},
		{name: "AGlobstarInTheMiddle", root: "", sub: Paths{"org/**/public"}, at: "org",
			allowSub: []string{"public", "a/public", "a/b/public"}, denySub: []string{"a/private", "a/public/x"}},
		{name: "AConnectionBelowTheRootNarrows", root: "demo", pub: Paths{"room/alice", "lobby"}, at: "demo/room",
			allowPub: []string{"alice"}, denyPub: []string{"", "bob", "lobby"}},
		{name: "AConnectionAboveTheRootKeepsThemAnchored", root: "demo", pub: Paths{"alice"}, at: "",
			allowPub: []string{"demo/alice"}, denyPub: []string{"alice", "demo"}},
		{name: "BesideALegacyGrant", root: "demo", pub: Paths{"alice"}, at: "demo",
			allowSub: []string{"x", "y/z"}, allowPub: []string{"alice"}, denyPub: []string{"bob"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Claims{Root: tc.root, Publish: tc.pub, Subscribe: tc.sub}
			if tc.name == "BesideALegacyGrant" {
				c.Get = Paths{""}
			}
			p, err := c.Authorize(tc.at)
			if err != nil {
				t.Fatal(err)
			}
			for _, path := range tc.allowPub {
				if !p.CanPublish(path) {
					t.Errorf("may not publish %q", path)
				}
			}
			for _, path := range tc.denyPub {
				if p.CanPublish(path) {
					t.Errorf("may publish %q", path)
				}
			}
			for _, path := range tc.allowSub {
				if !p.CanSubscribe(path) {
					t.Errorf("may not subscribe to %q", path)
				}
			}
			for _, path := range tc.denySub {
				if p.CanSubscribe(path) {
					t.Errorf("may subscribe to %q", path)
				}
			}
			if p.Publishes() != (len(tc.allowPub) > 0) || p.Subscribes() != (len(tc.allowSub) > 0) {
				t.Errorf("publishes %v subscribes %v", p.Publishes(), p.Subscribes())
			}
		})
	}
}

func TestAConnectionWherePatternsGrantNothingIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    Claims
		at   string
		err  error
	}{
		{"NoPatternReachesThePath", Claims{Root: "demo", Publish: Paths{"room/**"}}, "demo/lobby", ErrNoAccess},
		{"ALiteralIsNoSubtree", Claims{Root: "demo", Subscribe: Paths{"alice"}}, "demo/alice/hd", ErrNoAccess},
		{"AnUnrelatedRoot", Claims{Root: "demo", Publish: Paths{"**"}}, "other", ErrRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.c.Authorize(tc.at); !errors.Is(err, tc.err) {
				t.Fatalf("got %v, want %v", err, tc.err)
			}
		})
	}
}

func TestPatternClaimsAreSignedVerifiedAndChecked(t *testing.T) {
	k := mustGenerate(t, "HS256")
	tok, err := k.Sign(Claims{Root: "demo", Publish: Paths{"room/**"}, Subscribe: Paths{"*/chat"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := k.Verify(tok, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Publish) != 1 || c.Publish[0] != "room/**" || len(c.Subscribe) != 1 {
		t.Fatalf("claims %+v", c)
	}
	for _, bad := range []string{"/room", "room/", "a//b", "**/**", "a**", "a*b*c"} {
		if _, err := k.Sign(Claims{Publish: Paths{bad}}); !errors.Is(err, ErrMalformed) || !errors.Is(err, ErrPattern) {
			t.Errorf("pattern %q: %v, want ErrMalformed and ErrPattern", bad, err)
		}
	}
	if _, err := k.Sign(Claims{Root: "demo"}); !errors.Is(err, ErrUseless) {
		t.Errorf("no grant: %v", err)
	}
}

func TestAKeysScopeCapsPatternClaims(t *testing.T) {
	k := mustGenerate(t, "HS256")
	k.scope = &Scope{Root: "live", Put: []string{"room"}, Get: []string{""}}
	for _, tc := range []struct {
		c  Claims
		ok bool
	}{
		{Claims{Root: "live", Publish: Paths{"room/**"}}, true},
		{Claims{Root: "live/room", Publish: Paths{"cam-*"}}, true},
		{Claims{Root: "live", Publish: Paths{"**"}}, false},           // all of live
		{Claims{Root: "live", Publish: Paths{"*/room"}}, false},       // starts with a wildcard
		{Claims{Root: "live", Subscribe: Paths{"anything/**"}}, true}, // get covers live
		{Claims{Root: "", Subscribe: Paths{"other/**"}}, false},
	} {
		_, err := k.Sign(tc.c)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrScope)) {
			t.Errorf("%+v: %v, want ok=%v", tc.c, err, tc.ok)
		}
	}
}
