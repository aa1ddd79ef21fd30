package token

import (
	"errors"
	"fmt"
	"strings"

	"github.com/moq-export/moq-export/internal/moqpath"
)

// ErrPattern means a "publish" or "subscribe" claim that is not a path
// pattern.
var ErrPattern = errors.New("token: not a path pattern")

// maxPatternSegments bounds a pattern, as the wire bounds a path.
const maxPatternSegments = 32

// segKind is what one segment of a pattern matches.
type segKind uint8

const (
	segLiteral  segKind = iota // exactly its text
	segWildcard                // "*": any one segment
	segPartial                 // "pre*suf": one segment with that start and end
	segGlobstar                // "**": any run of zero or more segments
)

type segment struct {
	kind        segKind
	text        string // literal
	pre, suffix string // partial
}

// pattern is a parsed path pattern of the newer tokens (the grammar of the
// reference's @moq/pattern): "/"-separated segments, each a literal, "*",
// "pre*suf" or, at most once, "**". Patterns are exact: "room" is that one
// broadcast, "room/**" the room and everything beneath it, "**"
// everything, "" only the root itself. Written by hand: a few lines of
// segment matching, which no Go library does on moq paths.
type pattern struct {
	segs     []segment
	globstar int // index of "**", -1 without one
}

// parsePattern reads a pattern's text. Unlike a path, slashes are not
// normalized: a leading, trailing or doubled "/" is an error, so a typo
// cannot widen a grant.
func parsePattern(text string) (pattern, error) {
	p := pattern{globstar: -1}
	if text == "" {
		return p, nil
	}
	parts := strings.Split(text, "/")
	if len(parts) > maxPatternSegments {
		return p, fmt.Errorf("%w: %q has more than %d segments", ErrPattern, text, maxPatternSegments)
	}
	for i, s := range parts {
		var seg segment
		switch star := strings.IndexByte(s, '*'); {
		case s == "":
			return p, fmt.Errorf("%w: %q has an empty segment", ErrPattern, text)
		case s == "*":
			seg.kind = segWildcard
		case s == "**":
			if p.globstar >= 0 {
				return p, fmt.Errorf("%w: %q has more than one **", ErrPattern, text)
			}
			seg.kind, p.globstar = segGlobstar, i
		case star < 0:
			seg = segment{kind: segLiteral, text: s}
		case strings.IndexByte(s[star+1:], '*') >= 0:
			return p, fmt.Errorf("%w: %q has a segment with more than one *", ErrPattern, text)
		default:
			seg = segment{kind: segPartial, pre: s[:star], suffix: s[star+1:]}
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

// subtree is the pattern of a legacy put/get prefix: the path and
// everything beneath it.
func subtree(path string) pattern {
	p := pattern{globstar: -1}
	p = p.under(moqpath.Clean(path))
	p.segs = append(p.segs, segment{kind: segGlobstar})
	p.globstar = len(p.segs) - 1
	return p
}

// under returns p anchored beneath path (its literal segments first).
func (p pattern) under(path string) pattern {
	if path == "" {
		return p
	}
	var out pattern
	for _, s := range strings.Split(path, "/") {
		out.segs = append(out.segs, segment{kind: segLiteral, text: s})
	}
	out.globstar = -1
	if p.globstar >= 0 {
		out.globstar = len(out.segs) + p.globstar
	}
	out.segs = append(out.segs, p.segs...)
	return out
}

func (s segment) matches(part string) bool {
	switch s.kind {
	case segLiteral:
		return s.text == part
	case segWildcard:
		return true
	case segPartial:
		return len(part) >= len(s.pre)+len(s.suffix) && strings.HasPrefix(part, s.pre) && strings.HasSuffix(part, s.suffix)
	}
	return false
}

func split(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// matches reports whether the (clean) path is in the pattern's set.
func (p pattern) matches(path string) bool {
	parts := split(path)
	if p.globstar < 0 {
		if len(parts) != len(p.segs) {
			return false
		}
		for i, s := range p.segs {
			if !s.matches(parts[i]) {
				return false
			}
		}
		return true
	}
	pre, post := p.segs[:p.globstar], p.segs[p.globstar+1:]
	if len(parts) < len(pre)+len(post) {
		return false
	}
	for i, s := range pre {
		if !s.matches(parts[i]) {
			return false
		}
	}
	for i, s := range post {
		if !s.matches(parts[len(parts)-len(post)+i]) {
			return false
		}
	}
	return true
}

// reaches reports whether some path at or beneath the (clean) path is in
// the pattern's set: whether the pattern grants anything there.
func (p pattern) reaches(path string) bool {
	parts := split(path)
	fixed := p.segs
	if p.globstar >= 0 {
		fixed = p.segs[:p.globstar] // the "**" takes whatever follows
	} else if len(parts) > len(fixed) {
		return false
	}
	for i := 0; i < len(parts) && i < len(fixed); i++ {
		if !fixed[i].matches(parts[i]) {
			return false
		}
	}
	return true
}

// head returns the literal segments before the first wildcard: every path
// the pattern matches starts with it.
func (p pattern) head() string {
	var lits []string
	for _, s := range p.segs {
		if s.kind != segLiteral {
			break
		}
		lits = append(lits, s.text)
	}
	return strings.Join(lits, "/")
}

// parsePatterns parses a claim's patterns, anchored beneath root.
func parsePatterns(root string, texts []string) ([]pattern, error) {
	out := make([]pattern, 0, len(texts))
	for _, t := range texts {
		p, err := parsePattern(t)
		if err != nil {
			return nil, err
		}
		out = append(out, p.under(moqpath.Clean(root)))
	}
	return out, nil
}
