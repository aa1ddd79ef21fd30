package session

import (
	"sync"
	"time"
)

// ReadWithin runs read, a read of str, and ends it by a read deadline on
// str when it is not done within d: nothing else wakes a read on a stream
// whose peer went silent while its connection stays up (a WebTransport
// stream's CancelRead does not either). Both families read a message a
// peer began this way (a control message, the request of a stream the
// peer opened). It reports whether the deadline fell: a read that took
// that long is a timeout even if it came whole as the deadline fell, the
// deadline stays set then, and the caller gives the stream up.
func ReadWithin(str interface{ SetReadDeadline(time.Time) error }, d time.Duration, read func()) (timedOut bool) {
	var (
		mu          sync.Mutex
		done, fired bool
	)
	t := time.AfterFunc(d, func() {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			fired = true
			_ = str.SetReadDeadline(time.Now())
		}
	})
	read()
	t.Stop()
	mu.Lock()
	defer mu.Unlock()
	done = true
	return fired
}
