package ietfpub

import (
	"testing"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/session"
)

func TestASubscribeFilterStartsWhereItsDraftSays(t *testing.T) {
	edge := session.Edge{Group: 7, Frames: 3, OK: true}
	tests := []struct {
		name string
		f    ietf.Filter
		v    ietf.Version
		e    session.Edge
		want trackRange
	}{
		{"largest object starts the newest group before draft 20", ietf.Filter{Type: ietf.FilterLargestObject}, ietf.Draft18, edge,
			trackRange{Start: ietf.Location{Group: 7}}},
		{"largest object is the next object in draft 20", ietf.Filter{Type: ietf.FilterLargestObject}, ietf.Draft20, edge,
			trackRange{Start: ietf.Location{Group: 7, Object: 3}}},
		{"next group", ietf.Filter{Type: ietf.FilterNextGroup}, ietf.Draft20, edge,
			trackRange{Start: ietf.Location{Group: 8}}},
		{"a relative start counts groups back from the next one", ietf.Filter{Type: ietf.FilterRelative, Groups: 3}, ietf.Draft20, edge,
			trackRange{Start: ietf.Location{Group: 5}}},
		{"a relative start before the first group starts at 0", ietf.Filter{Type: ietf.FilterRelative, Groups: 30}, ietf.Draft20, edge,
			trackRange{}},
		{"an absolute start of {0,0} is no filter: the newest group", ietf.Filter{Type: ietf.FilterAbsoluteStart}, ietf.Draft14, edge,
			trackRange{Start: ietf.Location{Group: 7}}},
		{"an absolute range ends after its end group", ietf.Filter{Type: ietf.FilterAbsoluteRange, Start: ietf.Location{Group: 2, Object: 1}, End: 4},
			ietf.Draft14, edge, trackRange{Start: ietf.Location{Group: 2, Object: 1}, End: 4, HasEnd: true}},
		{"before any content every filter starts at {0,0}", ietf.Filter{Type: ietf.FilterNextGroup}, ietf.Draft20, session.Edge{},
			trackRange{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := subscribeRange(tt.f, tt.v, tt.e); got != tt.want {
				t.Fatalf("range %+v, want %+v", got, tt.want)
			}
		})
	}
}

// A range is the core's window, ending once delivered, and a fetched
// group's part of it.
func TestARangeIsAFiniteWindowAndEachGroupsPartOfIt(t *testing.T) {
	r := trackRange{Start: ietf.Location{Group: 2, Object: 1}, End: 4, EndObject: 5, HasEnd: true}
	want := session.Window{Start: session.Location{Group: 2, Frame: 1}, HasStart: true, End: 4, EndFrame: 5, HasEnd: true, Finite: true}
	if got := r.window(); got != want {
		t.Fatalf("window %+v, want %+v", got, want)
	}
	for _, c := range []struct{ seq, from, to uint64 }{{2, 1, 0}, {3, 0, 0}, {4, 0, 5}} {
		if from, to := r.frames(c.seq); from != c.from || to != c.to {
			t.Errorf("group %d: frames [%d, %d), want [%d, %d)", c.seq, from, to, c.from, c.to)
		}
	}
}
