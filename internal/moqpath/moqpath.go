package moqpath

import "strings"

// Clean drops empty segments: "/a//b/" is "a/b". A clean path is returned
// as it is, without allocating.
func Clean(p string) string {
	if !strings.Contains(p, "//") && !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/") {
		return p
	}
	parts := strings.Split(p, "/")
	out := parts[:0]
	for _, s := range parts {
		if s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "/")
}

// Join joins two clean paths with one "/" unless either is empty.
func Join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "/" + b
}

// CutPrefix returns path below prefix when prefix is a segment-aligned
// prefix of it ("" is a prefix of everything). Both must be clean.
func CutPrefix(path, prefix string) (string, bool) {
	switch {
	case prefix == "":
		return path, true
	case path == prefix:
		return "", true
	case strings.HasPrefix(path, prefix) && path[len(prefix)] == '/':
		return path[len(prefix)+1:], true
	}
	return "", false
}
