package token

import (
	"fmt"

	"github.com/moq-export/moq-export/internal/moqpath"
)

// Permissions are what a token grants at one connection path: the
// broadcast paths, relative to that path, under which the bearer may
// publish and subscribe ("" is everything under it), from put and get;
// and the publish and subscribe patterns (as the token writes them,
// relative to its root) that grant something there.
type Permissions struct {
	Publish   []string
	Subscribe []string

	PublishPatterns   []string
	SubscribePatterns []string

	at       string    // the connection path
	pub, sub []pattern // the patterns, anchored at the root
}

// CanPublish reports whether the bearer may publish the broadcast at path
// (relative to the connection path).
func (p Permissions) CanPublish(path string) bool {
	return underAny(moqpath.Clean(path), p.Publish) || p.matchAny(p.pub, path)
}

// CanSubscribe reports whether the bearer may subscribe to the broadcast
// at path (relative to the connection path).
func (p Permissions) CanSubscribe(path string) bool {
	return underAny(moqpath.Clean(path), p.Subscribe) || p.matchAny(p.sub, path)
}

// Publishes reports whether the bearer may publish anything here.
func (p Permissions) Publishes() bool { return len(p.Publish) > 0 || len(p.pub) > 0 }

// Subscribes reports whether the bearer may subscribe to anything here.
func (p Permissions) Subscribes() bool { return len(p.Subscribe) > 0 || len(p.sub) > 0 }

func (p Permissions) matchAny(ps []pattern, path string) bool {
	full := moqpath.Join(p.at, moqpath.Clean(path))
	for _, pt := range ps {
		if pt.matches(full) {
			return true
		}
	}
	return false
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
	p := Permissions{Publish: scope(c.Put), Subscribe: scope(c.Get), at: target}
	// Patterns match whole paths: each is anchored at the root and kept
	// when it matches something at or beneath the connection path.
	reaching := func(texts []string) (kept []string, ps []pattern) {
		all, err := parsePatterns(root, texts)
		if err != nil {
			return nil, nil // Verify refuses such claims
		}
		for i, pt := range all {
			if pt.reaches(target) {
				kept, ps = append(kept, texts[i]), append(ps, pt)
			}
		}
		return kept, ps
	}
	p.PublishPatterns, p.pub = reaching(c.Publish)
	p.SubscribePatterns, p.sub = reaching(c.Subscribe)
	if !p.Publishes() && !p.Subscribes() {
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
