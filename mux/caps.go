package mux

import "fmt"

// Caps says what a container carries, without a muxer; its AddTrack applies
// the same rules. The zero Caps accepts everything.
type Caps struct {
	Container string            // "flv", "mkv", "webm", "ts", "mp4"
	Supports  func(Track) error // nil or why not; looks at the track only
	PerKind   map[Kind]int      // tracks of a kind at once; 0: no limit
}

// Check returns Supports(t), nil without Supports.
func (c Caps) Check(t Track) error {
	if c.Supports == nil {
		return nil
	}
	return c.Supports(t)
}

// CheckCount says whether one more track of kind k fits beside n (nil), or
// wraps ErrTrackLimit.
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
