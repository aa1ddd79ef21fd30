package moqpath

import "testing"

func TestPaths(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""}, {"a", "a"}, {"a/b", "a/b"}, {"/a//b/", "a/b"}, {"//", ""}, {"/a", "a"}, {"a/", "a"},
	} {
		if got := Clean(tc.in); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ a, b, want string }{
		{"", "", ""}, {"a", "", "a"}, {"", "b", "b"}, {"a", "b/c", "a/b/c"},
	} {
		if got := Join(tc.a, tc.b); got != tc.want {
			t.Errorf("Join(%q, %q) = %q, want %q", tc.a, tc.b, got, tc.want)
		}
	}
	for _, tc := range []struct {
		path, prefix, rest string
		ok                 bool
	}{
		{"room/alice", "", "room/alice", true},
		{"room", "room", "", true},
		{"room/alice", "room", "alice", true},
		{"roomy", "room", "", false},
		{"room", "room/alice", "", false},
		{"a/b/c", "a/b", "c", true},
	} {
		rest, ok := CutPrefix(tc.path, tc.prefix)
		if rest != tc.rest || ok != tc.ok {
			t.Errorf("CutPrefix(%q, %q) = %q, %v; want %q, %v", tc.path, tc.prefix, rest, ok, tc.rest, tc.ok)
		}
	}
}
