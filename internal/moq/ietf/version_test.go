package ietf

import "testing"

// TestEachDraftsRowSaysWhatItsWireCarries pins the version table against
// the drafts each capability was first written for (the comparisons the
// session code made before the table), and checks that the table has one
// row per draft, in order, up to Newest.
func TestEachDraftsRowSaysWhatItsWireCarries(t *testing.T) {
	for i, row := range drafts {
		if want := Draft14 + Version(i); row.v != want {
			t.Fatalf("row %d is %v, want %v", i, row.v, want)
		}
	}
	if last := drafts[len(drafts)-1].v; last != Newest {
		t.Fatalf("the last row is %v, want Newest (%v)", last, Newest)
	}
	caps := []struct {
		name string
		got  func(Version) bool
		want func(Version) bool
	}{
		{"LeadingOnes", Version.LeadingOnes, func(v Version) bool { return v >= Draft17 }},
		{"ControlStream", Version.ControlStream, func(v Version) bool { return v <= Draft16 }},
		{"FlowControl", Version.FlowControl, func(v Version) bool { return v <= Draft16 }},
		{"RequestIDInResponses", Version.RequestIDInResponses, func(v Version) bool { return v <= Draft16 }},
		{"PerRequestResponses", Version.PerRequestResponses, func(v Version) bool { return v == Draft14 }},
		{"SubscribeParams", Version.SubscribeParams, func(v Version) bool { return v != Draft14 }},
		{"DescendingFetch", Version.DescendingFetch, func(v Version) bool { return v == Draft14 }},
		{"NamespaceStream", Version.NamespaceStream, func(v Version) bool { return v >= Draft16 }},
		{"NamespaceDoneByID", Version.NamespaceDoneByID, func(v Version) bool { return v == Draft16 }},
		{"RequiredDelta", Version.RequiredDelta, func(v Version) bool { return v == Draft17 }},
		{"Layout18", Version.Layout18, func(v Version) bool { return v == Draft16 || v == Draft17 }},
		{"RelativeFilter", Version.RelativeFilter, func(v Version) bool { return v >= Draft20 }},
		{"LargestObjectMidGroup", Version.LargestObjectMidGroup, func(v Version) bool { return v >= Draft20 }},
		{"deltaParams", Version.deltaParams, func(v Version) bool { return v >= Draft16 }},
		{"typedParams", Version.typedParams, func(v Version) bool { return v >= Draft17 }},
		{"deltaProperties", Version.deltaProperties, func(v Version) bool { return v >= Draft16 }},
		{"firstObjectBit", Version.firstObjectBit, func(v Version) bool { return v >= Draft18 }},
		{"writesTrackProperties", Version.writesTrackProperties, func(v Version) bool { return v >= Draft17 }},
		{"readsTrackProperties", Version.readsTrackProperties, func(v Version) bool { return v >= Draft16 }},
		{"typedFilter", Version.typedFilter, func(v Version) bool { return v >= Draft22 }},
	}
	for _, c := range caps {
		for v := Draft14; v <= Newest; v++ {
			if got, want := c.got(v), c.want(v); got != want {
				t.Errorf("%v.%s() = %v, want %v", v, c.name, got, want)
			}
		}
	}
}

// TestADraftOutsideTheTableReadsAsTheNearestRow: the codec's fuzzers and
// error paths may hold any code; they read the first or the last row.
func TestADraftOutsideTheTableReadsAsTheNearestRow(t *testing.T) {
	for _, c := range []struct {
		v, as Version
	}{{0, Draft14}, {Draft14 - 1, Draft14}, {Newest + 1, Newest}, {^Version(0), Newest}} {
		if *c.v.caps() != *c.as.caps() {
			t.Errorf("%#x reads as %+v, want %v's row", uint32(c.v), *c.v.caps(), c.as)
		}
	}
}
