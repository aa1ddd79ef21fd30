package token

import (
	"fmt"
	"strings"
)

// Permissions are what a token grants at one connection path: the
// broadcast paths, relative to that path, under which the bearer may
// publish and subscribe ("" is everything under it).
type Permissions struct {
	Publish   []string
	Subscribe []string
}

// CanPublish reports whether the bearer may publish the broadcast at path
// (relative to the connection path).
func (p Permissions) CanPublish(path string) bool { return underAny(normalize(path), p.Publish) }

// CanSubscribe reports whether the bearer may subscribe to the broadcast
// at path (relative to the connection path).
func (p Permissions) CanSubscribe(path string) bool {
	return underAny(normalize(path), p.Subscribe)
}

func underAny(path string, prefixes []string) bool {
	for _, pre := range prefixes {
		if _, ok := cutPrefix(path, pre); ok {
			return true
		}
	}
	return false
}

// Authorize returns what the claims grant on a session whose connection
// path is path. The path may equal the root, extend it (grants outside
// the extension are dropped, the rest are rebased onto it) or be a parent
// of it (grants are anchored at the root below it). Errors wrap ErrRoot
// (the two are unrelated) or ErrNoAccess (no grant is left).
func (c *Claims) Authorize(path string) (Permissions, error) {
	target, root := normalize(path), normalize(c.Root)
	// Exactly one of beyond (the path past the root) and above (the root
	// past the path) is non-empty, or neither.
	var beyond, above string
	if rest, ok := cutPrefix(target, root); ok {
		beyond = rest
	} else if rest, ok := cutPrefix(root, target); ok {
		above = rest
	} else {
		return Permissions{}, fmt.Errorf("%w: connected at %q, the token's root is %q", ErrRoot, target, root)
	}
	scope := func(grants []string) []string {
		var out []string
		for _, g := range grants {
			full := join(above, normalize(g))
			if rest, ok := cutPrefix(full, beyond); ok {
				out = append(out, rest) // the grant reaches below the path
			} else if _, ok := cutPrefix(beyond, full); ok {
				out = append(out, "") // the grant holds the whole path
			}
		}
		return out
	}
	p := Permissions{Publish: scope(c.Put), Subscribe: scope(c.Get)}
	if len(p.Publish) == 0 && len(p.Subscribe) == 0 {
		return Permissions{}, fmt.Errorf("%w: %q", ErrNoAccess, target)
	}
	return p, nil
}

// covers reports whether every requested path (relative to reqRoot) lies
// under one of the granted ones (relative to grantRoot): a key's scope
// against a token's claims, role by role.
func covers(grantRoot string, granted []string, reqRoot string, requested []string) bool {
	for _, r := range requested {
		full := join(normalize(reqRoot), normalize(r))
		ok := false
		for _, g := range granted {
			if _, in := cutPrefix(full, join(normalize(grantRoot), normalize(g))); in {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// normalize drops empty segments: "/a//b/" is "a/b".
func normalize(p string) string {
	if !strings.Contains(p, "//") && !strings.HasPrefix(p, "/") && !strings.HasSuffix(p, "/") {
		return p
	}
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "/")
}

// cutPrefix returns path below prefix when prefix is a segment-aligned
// prefix of it ("" is a prefix of everything). Both are normalized.
func cutPrefix(path, prefix string) (string, bool) {
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

func join(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "/" + b
}
