package mux

import (
	"errors"
	"fmt"
)

// ErrTrackLimit means the container already carries as many tracks of the
// kind as it can (see Caps.PerKind).
var ErrTrackLimit = errors.New("track limit reached")

// Caps says what one container can carry, without building a muxer. Each
// muxer package exports its Caps and its AddTrack applies the same rules,
// so it refuses a track Caps accepts only for its state (a header already
// written). The zero Caps accepts every track, unlimited.
type Caps struct {
	// Container names the container in messages: "flv", "mkv", "webm",
	// "ts", "mp4".
	Container string
	// Supports returns nil when the container can carry t, or why not
	// (usually an *UnsupportedCodecError). It looks at t only.
	Supports func(Track) error
	// PerKind caps how many tracks of a kind it carries at once; absent
	// or 0 is unlimited. FLV: {Video: 1, Audio: 1}.
	PerKind map[Kind]int
}

// Check returns Supports(t), or nil without Supports.
func (c Caps) Check(t Track) error {
	if c.Supports == nil {
		return nil
	}
	return c.Supports(t)
}

// CheckCount returns nil when the container can take one more track of kind
// k while it carries n of that kind, else an error wrapping ErrTrackLimit.
func (c Caps) CheckCount(k Kind, n int) error {
	if l := c.PerKind[k]; l > 0 && n >= l {
		return fmt.Errorf("%s carries at most %d %v track(s): %w", c.name(), l, k, ErrTrackLimit)
	}
	return nil
}

func (c Caps) name() string {
	if c.Container == "" {
		return "the container"
	}
	return c.Container
}
