package allocs

import (
	"runtime"
	"strings"
)

// Module is this module's import path prefix.
const Module = "github.com/moq-export/moq-export/"

// Counts is how many heap allocations a run made, split by owner.
type Counts struct {
	// Own were made by code under the prefix given to Count, OwnApart
	// the part of those whose stack runs through a function named apart
	// (the other side of a loopback test, say), not included in Own.
	Own, OwnApart int64
	// Others were made by anyone else: dependencies, and the runtime or
	// the standard library on their own (a goroutine's stack, a timer).
	Others int64
	// ByPackage is every allocation by owning package path ("" for the
	// runtime and the standard library on their own).
	ByPackage map[string]int64
}

// Count runs f twice with every allocation recorded and returns what the
// second run allocated, in f's goroutines and in every other meanwhile. The
// first run lets the sampling rate take effect (each P draws its next
// sample at the rate that held before). An allocation belongs to the
// innermost caller outside the runtime and the standard library: a
// bufio.Reader that grows for quic-go counts as quic-go's, make([]byte)
// in this module as the module's. Own allocations made under a function
// whose name contains one of apart are counted in OwnApart instead of Own.
func Count(prefix string, f func(), apart ...string) Counts {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()
	f()
	before := snapshot()
	f()
	after := snapshot()
	c := Counts{ByPackage: map[string]int64{}}
	for key, rec := range after {
		n := rec.AllocObjects - before[key].AllocObjects
		if n <= 0 {
			continue
		}
		pkg, counting := owner(rec.Stack())
		if counting {
			continue // the snapshots themselves
		}
		c.ByPackage[pkg] += n
		switch {
		case pkg == "" || !strings.HasPrefix(pkg+"/", prefix):
			c.Others += n
		case through(rec.Stack(), apart):
			c.OwnApart += n
		default:
			c.Own += n
		}
	}
	return c
}

// through reports whether a function of stack has a name containing one
// of names.
func through(stack []uintptr, names []string) bool {
	if len(names) == 0 {
		return false
	}
	frames := runtime.CallersFrames(stack)
	for {
		fr, more := frames.Next()
		for _, n := range names {
			if strings.Contains(fr.Function, n) {
				return true
			}
		}
		if !more {
			return false
		}
	}
}

// snapshot returns the memory profile by stack as of now (the profile
// publishes a cycle's allocations at the end of the next one: hence two
// collections). The profile keeps a record per stack and size class, so
// one call site that allocates in several size classes has several
// records with the same stack: they are added up, not one kept.
func snapshot() map[[32]uintptr]runtime.MemProfileRecord {
	runtime.GC()
	runtime.GC()
	var recs []runtime.MemProfileRecord
	for {
		n, ok := runtime.MemProfile(recs, true)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+64)
	}
	out := make(map[[32]uintptr]runtime.MemProfileRecord, len(recs))
	for _, r := range recs {
		if prev, ok := out[r.Stack0]; ok {
			r.AllocBytes += prev.AllocBytes
			r.FreeBytes += prev.FreeBytes
			r.AllocObjects += prev.AllocObjects
			r.FreeObjects += prev.FreeObjects
		}
		out[r.Stack0] = r
	}
	return out
}

// owner returns the package of the innermost caller in stack outside the
// standard library (whose first path element has no dot), or "";
// counting is true for an allocation of Count itself.
func owner(stack []uintptr) (pkg string, counting bool) {
	frames := runtime.CallersFrames(stack)
	for {
		fr, more := frames.Next()
		if fr.Function == countFunc || fr.Function == snapshotFunc {
			return "", true
		}
		if pkg := packageOf(fr.Function); strings.Contains(firstElem(pkg), ".") {
			return pkg, false
		}
		if !more {
			return "", false
		}
	}
}

// The functions whose allocations are the counting's own.
const (
	countFunc    = Module + "internal/testutil/allocs.Count"
	snapshotFunc = Module + "internal/testutil/allocs.snapshot"
)

// packageOf returns the package path of a function name as
// runtime.Frame.Function gives it ("path/pkg.Func", "path/pkg.(*T).M",
// "path/pkg.F[...]" whose type arguments may hold slashes of their own).
func packageOf(fn string) string {
	if i := strings.IndexByte(fn, '['); i >= 0 {
		fn = fn[:i]
	}
	slash := strings.LastIndexByte(fn, '/')
	dot := strings.IndexByte(fn[slash+1:], '.')
	if dot < 0 {
		return fn
	}
	return fn[:slash+1+dot]
}

func firstElem(path string) string {
	if i := strings.IndexByte(path, '/'); i >= 0 {
		return path[:i]
	}
	return path
}
