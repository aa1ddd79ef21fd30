package layout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
)

// Info is a track's .info object: immutable, written before the track's
// first segment.
type Info struct {
	Version   int    // 2 written; 1 and 2 read
	Priority  uint8  // TRACK_INFO Publisher Priority
	Timescale uint64 // units per second of the track's frame timestamps
	// Epoch is the source route's Epoch as UUID text (v2 only; "" when
	// the source has none).
	Epoch string
}

var uuidText = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// MarshalInfo returns the compact JSON the reference writes, members in
// its order (version, priority, timescale, epoch).
func MarshalInfo(in Info) ([]byte, error) {
	if err := in.check(); err != nil {
		return nil, err
	}
	b := fmt.Appendf(nil, `{"version":%d,"priority":%d,"timescale":%d`, in.Version, in.Priority, in.Timescale)
	if in.Epoch != "" {
		b = fmt.Appendf(b, `,"epoch":%q`, in.Epoch)
	}
	return append(b, '}'), nil
}

func (in Info) check() error {
	switch {
	case in.Version != 1 && in.Version != 2:
		return fmt.Errorf("%w: .info version %d", ErrVersion, in.Version)
	case in.Timescale == 0 || in.Timescale > IDMax:
		return malformed("info", "timescale %d", in.Timescale)
	case in.Epoch != "" && in.Version != 2:
		return malformed("info", "epoch in a version %d object", in.Version)
	case in.Epoch != "" && !uuidText.MatchString(in.Epoch):
		return malformed("info", "epoch %q is not a UUID", in.Epoch)
	}
	return nil
}

// ParseInfo reads a .info object of version 1 or 2. Like the reference,
// it refuses unknown members and missing ones.
func ParseInfo(b []byte) (Info, error) {
	var raw struct {
		Version   *int64  `json:"version"`
		Priority  *int64  `json:"priority"`
		Timescale *uint64 `json:"timescale"`
		Epoch     *string `json:"epoch"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&raw); err != nil {
		return Info{}, malformed("info", "%v", err)
	}
	if d.More() {
		return Info{}, malformed("info", "bytes after the object")
	}
	if raw.Version == nil || raw.Priority == nil || raw.Timescale == nil {
		return Info{}, malformed("info", "version, priority and timescale are required")
	}
	if *raw.Version != 1 && *raw.Version != 2 {
		return Info{}, fmt.Errorf("%w: .info version %d", ErrVersion, *raw.Version)
	}
	if *raw.Priority < 0 || *raw.Priority > 255 {
		return Info{}, malformed("info", "priority %d", *raw.Priority)
	}
	in := Info{Version: int(*raw.Version), Priority: uint8(*raw.Priority), Timescale: *raw.Timescale}
	if raw.Epoch != nil {
		if *raw.Epoch == "" {
			return Info{}, malformed("info", "empty epoch")
		}
		in.Epoch = *raw.Epoch
	}
	if err := in.check(); err != nil {
		return Info{}, err
	}
	return in, nil
}

// SameTrack reports whether an existing .info lets a writer enroll with
// want: version, priority, timescale and epoch equal.
func SameTrack(have, want Info) bool { return have == want }
