package subscribe

import (
	"strings"

	"github.com/moq-export/moq-export/internal/moq/transport"
	"github.com/moq-export/moq-export/internal/moqpath"
)

// normPath normalizes a broadcast path the way moq-lite does: no leading or
// trailing "/", repeated "/" collapsed.
func normPath(p string) string { return moqpath.Clean(p) }

// joinPath joins a prefix and a suffix with one "/" unless either is empty.
func joinPath(prefix, suffix string) string {
	return moqpath.Join(moqpath.Clean(prefix), moqpath.Clean(suffix))
}

// stripPrefix returns path relative to prefix when prefix matches it on a
// segment boundary ("foo" matches "foo" and "foo/x", not "foobar").
func stripPrefix(path, prefix string) (string, bool) {
	return moqpath.CutPrefix(moqpath.Clean(path), moqpath.Clean(prefix))
}

// ResolveBroadcast resolves a rendition's "broadcast" reference against the
// path of the broadcast whose catalog holds it, like a relative URL:
// "./source" in "room/transcode" is "room/source", "" is the catalog's
// broadcast, "." its parent, "../x" a sibling of the parent, and a path
// starting with "/" is taken from the session root. ok is false when ref
// escapes above the root.
func ResolveBroadcast(catalogBroadcast, ref string) (path string, ok bool) {
	if ref == "" {
		return normPath(catalogBroadcast), true
	}
	var stack []string
	if !strings.HasPrefix(ref, "/") {
		// Relative to the directory of the catalog broadcast, as a URL
		// reference is relative to the document.
		base := strings.Split(normPath(catalogBroadcast), "/")
		if len(base) > 0 {
			base = base[:len(base)-1]
		}
		for _, s := range base {
			if s != "" {
				stack = append(stack, s)
			}
		}
	}
	for _, s := range strings.Split(ref, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(stack) == 0 {
				return "", false
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, s)
		}
	}
	return strings.Join(stack, "/"), true
}

// rootPath returns the session root a dial target names, without slashes
// at the ends.
func rootPath(t *transport.Target) string { return normPath(t.URL.Path) }
