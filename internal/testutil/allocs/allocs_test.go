package allocs

import (
	"bytes"
	"testing"
)

var sink [][]byte

func TestCountSplitsAllocationsByTheCallersModule(t *testing.T) {
	ours := func() {
		for range 100 {
			sink = append(sink[:0], make([]byte, 64)) // this package is in the module
		}
	}
	c := Count(Module, ours)
	if c.Own < 100 {
		t.Fatalf("own %d, want at least the 100 made here (%+v)", c.Own, c)
	}
	if got := c.ByPackage[Module+"internal/testutil/allocs"]; got != c.Own {
		t.Errorf("by package %v, want all %d own ones under internal/testutil/allocs", c.ByPackage, c.Own)
	}
	c = Count("example.com/elsewhere/", ours)
	if c.Own != 0 || c.Others < 100 {
		t.Fatalf("own %d others %d with another prefix, want 0 and at least 100", c.Own, c.Others)
	}
	// The standard library working for us is ours.
	c = Count(Module, func() {
		for range 100 {
			var b bytes.Buffer
			b.Write(make([]byte, 1000))
			b.WriteString("grow it past its first buffer, as a second allocation")
			sink = append(sink[:0], b.Bytes())
		}
	})
	if c.Own < 200 {
		t.Fatalf("own %d, want the 200 bytes.Buffer made for this package (%+v)", c.Own, c)
	}
	sink = nil
}

func TestPackageOf(t *testing.T) {
	for _, tc := range []struct{ fn, want string }{
		{"github.com/quic-go/quic-go.(*Conn).run", "github.com/quic-go/quic-go"},
		{"github.com/moq-export/moq-export/internal/moq/lite/wire.readN", "github.com/moq-export/moq-export/internal/moq/lite/wire"},
		{"github.com/moq-export/moq-export/subscribe.serveStreams[...].func1", "github.com/moq-export/moq-export/subscribe"},
		{"example.com/a.F[example.com/b/c.T]", "example.com/a"},
		{"bufio.(*Reader).fill", "bufio"},
		{"golang.org/x/net/internal/socket.parseInetAddr", "golang.org/x/net/internal/socket"},
		{"runtime.mallocgc", "runtime"},
	} {
		if got := packageOf(tc.fn); got != tc.want {
			t.Errorf("packageOf(%q) = %q, want %q", tc.fn, got, tc.want)
		}
	}
}

func TestCountLeavesItsOwnAllocationsOut(t *testing.T) {
	if c := Count(Module, func() {}); c.Own != 0 {
		t.Fatalf("an empty run counted %d own allocations: %v", c.Own, c.ByPackage)
	}
}

//go:noinline
func otherSide() { sink = append(sink[:0], make([]byte, 64)) }

func TestCountPutsWhatRunsThroughApartAside(t *testing.T) {
	c := Count(Module, func() {
		for range 100 {
			otherSide()
			sink = append(sink[:0], make([]byte, 64))
		}
	}, "allocs.otherSide")
	if c.OwnApart != 100 || c.Own != 100 {
		t.Fatalf("own %d, apart %d: want 100 each", c.Own, c.OwnApart)
	}
	sink = nil
}

// sized makes one slice of n bytes at one call site, whatever n is.
//
//go:noinline
func sized(n int) []byte { return make([]byte, 0, n) }

// The profile keeps one record per stack and size class: one call site
// that allocates in several size classes (a buffer sized by the previous
// one, say) has several records with the same stack. Every one counts.
func TestOneCallSiteInSeveralSizeClassesCountsEveryAllocation(t *testing.T) {
	c := Count(Module, func() {
		for i := range 400 {
			sink = append(sink[:0], sized(100+i%8*40)) // 8 size classes, 100 to 380 bytes
		}
	})
	if got := c.ByPackage[Module+"internal/testutil/allocs"]; got < 400 {
		t.Fatalf("counted %d of the 400 allocations made in 8 size classes at one call site", got)
	}
	sink = nil
}
