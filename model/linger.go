package model

import (
	"runtime"
	"time"
)

// LingerFor bounds how long a reader or the writer of an unpaced
// broadcast (SetUnpaced: an archive read whole) waits for the other side
// before it sleeps. Each side runs dry hundreds of times per hour of
// media, for 10-130 µs each (median 30: a trace at real-time priority),
// while the other reads, unpacks or muxes the next part. A goroutine that
// sleeps puts its thread to sleep, and on a virtual machine whose guest
// does not poll before it halts (this project's machines:
// haltpoll.guest_halt_poll_ns=0) a sleeping core is slow to wake: each
// dry spell then costs that wakeup, paid again by the other side's
// signal to start it.
const LingerFor = 200 * time.Microsecond

// Linger waits up to LingerFor for ready to report true, giving its P to
// any other goroutine that can run meanwhile (runtime.Gosched); it
// reports whether ready did. It costs CPU only while nothing else of the
// process can run, at most LingerFor per call.
func Linger(ready func() bool) bool {
	start := time.Now()
	for !ready() {
		if time.Since(start) > LingerFor {
			return false
		}
		runtime.Gosched()
	}
	return true
}
