package token

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/moqpath"
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
func (p Permissions) CanPublish(path string) bool { return underAny(moqpath.Clean(path), p.Publish) }

// CanSubscribe reports whether the bearer may subscribe to the broadcast
// at path (relative to the connection path).
func (p Permissions) CanSubscribe(path string) bool {
	return underAny(moqpath.Clean(path), p.Subscribe)
}

func underAny(path string, prefixes []string) bool {
	for _, pre := range prefixes {
		if _, ok := moqpath.CutPrefix(path, pre); ok {
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
	target, root := moqpath.Clean(path), moqpath.Clean(c.Root)
	// Exactly one of beyond (the path past the root) and above (the root
	// past the path) is non-empty, or neither.
	var beyond, above string
	if rest, ok := moqpath.CutPrefix(target, root); ok {
		beyond = rest
	} else if rest, ok := moqpath.CutPrefix(root, target); ok {
		above = rest
	} else {
		return Permissions{}, fmt.Errorf("%w: connected at %q, the token's root is %q", ErrRoot, target, root)
	}
	scope := func(grants []string) []string {
		var out []string
		for _, g := range grants {
			full := moqpath.Join(above, moqpath.Clean(g))
			if rest, ok := moqpath.CutPrefix(full, beyond); ok {
				out = append(out, rest) // the grant reaches below the path
			} else if _, ok := moqpath.CutPrefix(beyond, full); ok {
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
		full := moqpath.Join(moqpath.Clean(reqRoot), moqpath.Clean(r))
		ok := false
		for _, g := range granted {
			if _, in := moqpath.CutPrefix(full, moqpath.Join(moqpath.Clean(grantRoot), moqpath.Clean(g))); in {
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
