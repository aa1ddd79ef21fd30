package session

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LostWith reports whether err, which ended a request on c, came with the
// loss of c rather than from the peer: c is gone, or err is a request
// timeout (ErrTimeout) and c is found gone within twice the time it takes
// to find a silent peer (Family.Silence; twice, for timers a loaded
// machine runs late). A blackhole hides a connection's loss for that long,
// and a request made into it times out first: taken for the peer's
// answer, it would fail for good what the next connection serves. It
// waits at most that long, and not past ctx; any other error is the
// peer's (false) unless it says the connection is gone.
func LostWith(ctx context.Context, c Family, err error) bool {
	if err == nil {
		return false
	}
	if c.Context().Err() != nil || c.Gone(err) {
		return true
	}
	if !errors.Is(err, ErrTimeout) {
		return false
	}
	t := time.NewTimer(2 * c.Silence())
	defer t.Stop()
	select {
	case <-c.Context().Done():
	case <-t.C:
	case <-ctx.Done():
	}
	return c.Context().Err() != nil
}

// withTimeout is ctx bounded by d, where running out of d is a request
// timeout (ErrTimeout, saying what timed out), which LostWith judges.
func withTimeout(ctx context.Context, d time.Duration, what string) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, fmt.Errorf("%w: %s within %v", ErrTimeout, what, d))
}
