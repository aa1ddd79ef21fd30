package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// IDMax is the largest group, record, frame index or timestamp the format
// allows (2^53-1, so JSON keeps it exact).
const IDMax = 1<<53 - 1

// IDWidth is the width of a numeric key field: zero-padded, so that
// lexical order is numeric order.
const IDWidth = 19

// TimelineSuffix ends the name of every v2 timeline track.
const TimelineSuffix = ".timeline.z"

// Reserved names inside a track's directory.
const (
	InfoName     = ".info"
	SegmentsName = "segments"
	GroupsName   = "groups" // v1 media objects
)

const hexDigits = "0123456789ABCDEF"

func keep(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// EncodeName is the key form of a track name: bytes A-Z a-z 0-9 _ - kept,
// every other byte %XX with uppercase hex. The result holds no '/' and
// never starts with '.'.
func EncodeName(name string) string {
	var b strings.Builder
	b.Grow(len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if keep(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// DecodeName reverses EncodeName and accepts only its canonical output
// (uppercase hex, no needless escape, no raw reserved byte, not empty).
func DecodeName(enc string) (string, error) {
	if enc == "" {
		return "", fmt.Errorf("%w: empty track name", ErrName)
	}
	out := make([]byte, 0, len(enc))
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if c != '%' {
			if !keep(c) {
				return "", fmt.Errorf("%w: %q holds %q unescaped", ErrName, enc, c)
			}
			out = append(out, c)
			continue
		}
		if i+2 >= len(enc) {
			return "", fmt.Errorf("%w: %q ends inside an escape", ErrName, enc)
		}
		hi, lo := strings.IndexByte(hexDigits, enc[i+1]), strings.IndexByte(hexDigits, enc[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("%w: %q: escape not two uppercase hex digits", ErrName, enc)
		}
		v := byte(hi<<4 | lo)
		if keep(v) {
			return "", fmt.Errorf("%w: %q escapes %q, which needs none", ErrName, enc, v)
		}
		out = append(out, v)
		i += 2
	}
	return string(out), nil
}

// FormatID is the 19-digit key form of id (at most IDMax).
func FormatID(id uint64) string {
	s := strconv.FormatUint(id, 10)
	return strings.Repeat("0", max(IDWidth-len(s), 0)) + s
}

// ParseID reads a 19-digit key field.
func ParseID(s string) (uint64, error) {
	if len(s) != IDWidth {
		return 0, fmt.Errorf("%w: id %q is not %d digits", ErrName, s, IDWidth)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: id %q is not decimal", ErrName, s)
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v > IDMax {
		return 0, fmt.Errorf("%w: id %q is above 2^53-1", ErrName, s)
	}
	return v, nil
}

// join puts key parts together with '/', skipping an empty prefix.
func join(prefix string, parts ...string) string {
	k := strings.Join(parts, "/")
	if prefix == "" {
		return k
	}
	return strings.TrimSuffix(prefix, "/") + "/" + k
}

// TrackDir is the key prefix of track name under prefix (no trailing '/').
func TrackDir(prefix, track string) string { return join(prefix, EncodeName(track)) }

// InfoKey is the key of track's .info object.
func InfoKey(prefix, track string) string { return join(prefix, EncodeName(track), InfoName) }

// SegmentsDir is the prefix of track's segment objects, with a trailing '/'.
func SegmentsDir(prefix, track string) string {
	return join(prefix, EncodeName(track), SegmentsName) + "/"
}

// SegmentKey is the key of record seq's object of track (v2; v1 timeline
// objects too).
func SegmentKey(prefix, track string, seq uint64) string {
	return KeyIn(SegmentsDir(prefix, track), seq)
}

// KeyIn is the key of the object with id seq under dir (as SegmentsDir
// returns it, with its trailing '/'): SegmentKey for a reader that made
// the dir once, in one allocation per key.
func KeyIn(dir string, seq uint64) string {
	var num [20]byte
	n := strconv.AppendUint(num[:0], seq, 10)
	var b strings.Builder
	b.Grow(len(dir) + max(IDWidth, len(n)))
	b.WriteString(dir)
	for range IDWidth - len(n) {
		b.WriteByte('0')
	}
	b.Write(n)
	return b.String()
}

// GroupsDir is the prefix of a v1 media track's group-range objects.
func GroupsDir(prefix, track string) string {
	return join(prefix, EncodeName(track), GroupsName) + "/"
}

// GroupsKey is the v1 key of the object holding groups smallest..largest.
func GroupsKey(prefix, track string, largest, smallest uint64) string {
	return join(prefix, EncodeName(track), GroupsName, FormatID(largest)+"."+FormatID(smallest))
}

// ParseGroupsName reads the last part of a v1 groups key.
func ParseGroupsName(s string) (largest, smallest uint64, err error) {
	a, b, ok := strings.Cut(s, ".")
	if !ok {
		return 0, 0, fmt.Errorf("%w: groups object %q", ErrName, s)
	}
	if largest, err = ParseID(a); err != nil {
		return 0, 0, err
	}
	if smallest, err = ParseID(b); err != nil {
		return 0, 0, err
	}
	if smallest > largest {
		return 0, 0, fmt.Errorf("%w: groups object %q: range reversed", ErrName, s)
	}
	return largest, smallest, nil
}

// TimelineOf names track's v2 timeline track.
func TimelineOf(track string) string { return track + TimelineSuffix }

// IsTimeline reports whether name is a timeline track's name.
func IsTimeline(name string) bool { return strings.HasSuffix(name, TimelineSuffix) }
