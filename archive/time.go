package archive

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moq-export/moq-export/archive/internal/layout"
)

// Time is a point of a recording: a media time (the broadcast's own
// timestamps, as --list shows them) or a wall-clock time, mapped through
// the catalog's clock.
type Time struct {
	Media time.Duration
	Wall  time.Time // set: a wall-clock time
}

// ParseTime reads a media time ("1h2m3s", "90s") or an RFC 3339
// wall-clock time ("2026-12-01T10:00:00Z").
func ParseTime(s string) (Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return Time{}, fmt.Errorf("archive: time %q is negative", s)
		}
		return Time{Media: d}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Time{Wall: t}, nil
	}
	return Time{}, fmt.Errorf("archive: time %q is neither a media time (1h2m3s) nor an RFC 3339 time (2026-12-01T10:00:00Z)", s)
}

// IsZero reports whether t is unset.
func (t Time) IsZero() bool { return t.Media == 0 && t.Wall.IsZero() }

// ErrNoClock is wrapped when a wall-clock time is asked of a recording
// whose catalog has no clock.
var ErrNoClock = errors.New("archive: the recording's catalog has no clock to map wall-clock times")

// Micros returns t as media time in µs of the recording: a wall-clock
// time through the clock of the catalog in effect at the start.
func (r *Recording) Micros(ctx context.Context, t Time) (int64, error) {
	if t.Wall.IsZero() {
		return t.Media.Microseconds(), nil
	}
	c, err := r.Clock(ctx)
	if err != nil {
		return 0, err
	}
	return max(c.Media(t.Wall), 0), nil
}

// Clock returns the catalog clock of the recording.
func (r *Recording) Clock(ctx context.Context) (layout.Clock, error) {
	_, frames, err := r.Catalog(ctx, 0)
	if err != nil {
		return layout.Clock{}, err
	}
	for _, f := range frames {
		if c, ok := layout.ParseClock(f.payload); ok {
			return c, nil
		}
	}
	return layout.Clock{}, fmt.Errorf("%w (%q)", ErrNoClock, r.name)
}

// WallTime returns the wall-clock time of media time us, when the
// catalog has a clock.
func (r *Recording) WallTime(ctx context.Context, us int64) (time.Time, bool) {
	c, err := r.Clock(ctx)
	if err != nil {
		return time.Time{}, false
	}
	return c.Time(us), true
}
