package export

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/moq-export/moq-export/model"
)

// Run drives the export until the broadcast ends, MaxDuration is reached or
// ctx is done, then writes what is buffered and finalizes the container. A
// cancelled ctx returns ctx.Err() after that, or the finalizing error.
// Run is Go and a wait for its end.
func (e *Export) Run(ctx context.Context) error {
	ended := make(chan error, 1)
	e.Go(ctx, func(err error) { ended <- err })
	return <-ended
}

// Go drives the export as Run does, and calls done with what Run would
// return once it ended (from whichever goroutine ran it last). It works in
// the calling goroutine until it has to wait, then returns; the work after
// each wait runs in a new goroutine (see Export.park). No goroutine waits
// for an export that waits for its broadcast: an idle recording costs no
// stack at all.
func (e *Export) Go(ctx context.Context, done func(error)) {
	e.ctx, e.done = ctx, done
	wake := e.wake // bound once: a wakeup starts a goroutine without allocating
	e.resume = func() { go wake() }
	if err := e.start(); err != nil {
		e.end(err)
		return
	}
	// A cancelled ctx wakes the export like any other event.
	e.stopCtxWake = context.AfterFunc(ctx, e.ready.Wake)
	e.drive()
}

// wake goes on with a parked export: the goroutine its ready set's wakeup
// started. A done ctx ends it before anything else is read.
func (e *Export) wake() {
	if err := e.ctx.Err(); err != nil {
		e.end(err)
		return
	}
	e.drive()
}

// drive does the ready work until the export ends, or until nothing is
// left to do: then it parks the export and returns.
func (e *Export) drive() {
	for {
		if err := e.poll(); err != nil {
			e.end(err)
			return
		}
		if e.finished {
			e.end(nil)
			return
		}
		if e.unpaced && e.linger() {
			continue
		}
		if e.park() {
			return
		}
		if err := e.ctx.Err(); err != nil {
			e.end(err)
			return
		}
	}
}

// park arranges for the export to go on at the next event: a consumer or
// the catalog receiving something, a backfill ending, ctx ending (Go's
// AfterFunc), or the next deadline of the jitter buffer or the start gate
// (a timer that wakes the ready set). It reports false when an event is
// pending already: the caller polls again at once.
//
// Parking instead of blocking in a select is what makes an idle export
// free: a goroutine blocked in Run's place would keep the stack its
// callers grew (a recording's setup: catalog, files, muxer), 8 KB, and the
// runtime halves a stack only while its blocked depth is under a quarter
// of it. A fresh goroutine per wakeup costs a few hundred nanoseconds
// more than waking a blocked one; a recording wakes per frame at most.
func (e *Export) park() bool {
	d, ok := e.jit.Deadline()
	if e.gate != nil && (!ok || e.gate.deadline.Before(d)) {
		d, ok = e.gate.deadline, true
	}
	switch {
	case ok && e.timer == nil:
		e.timer = time.AfterFunc(max(d.Sub(e.opts.Now()), time.Millisecond), e.ready.Wake)
	case ok:
		e.timer.Reset(max(d.Sub(e.opts.Now()), time.Millisecond))
	case e.timer != nil:
		e.timer.Stop() // nothing is due: an idle export gets no wakeups
	}
	return e.ready.Park(e.resume)
}

// linger waits, before the export parks, for a consumer its unpaced
// broadcast's producer makes ready within model.LingerFor; it reports
// whether one did, and the export then polls instead of parking.
func (e *Export) linger() bool {
	return model.Linger(func() bool { return !e.ready.Empty() })
}

// end finishes the export (finish) and reports the outcome to Go's done.
// A failed finalize (a full disk, a closed pipe) matters more than the
// cancellation that asked for it: the caller must not take a half-written
// file for a finished one.
func (e *Export) end(err error) {
	if cerr := e.finish(); cerr != nil && (err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		err = cerr
	}
	if e.stopCtxWake != nil {
		e.stopCtxWake()
	}
	if e.timer != nil {
		e.timer.Stop()
	}
	e.done(err)
}

// finish flushes the jitter buffer into the muxer and closes it. Unless the
// export was stopped by MaxDuration, everything buffered is written.
func (e *Export) finish() error {
	if e.muxerClosed {
		return nil
	}
	e.muxerClosed = true
	e.havePollNow = false
	if e.gate != nil && e.gate.cancel != nil {
		e.gate.cancel() // stop the start gate's backfills
	}
	for _, f := range e.fills {
		f.cancel()
	}
	var werr error
	for _, ts := range e.all {
		if !ts.ended {
			_ = e.releasePlain(ts, 0)
		}
	}
	for !e.timeUp {
		it, ok := e.jit.Flush()
		if !ok {
			break
		}
		if werr = e.write(it); werr != nil {
			break
		}
	}
	for _, ts := range e.all {
		if !ts.ended {
			ts.consumer.Close()
		}
	}
	if e.cat != nil {
		e.cat.Close()
	}
	if err := e.m.Close(); err != nil && werr == nil {
		werr = fmt.Errorf("export: finalizing: %w", err)
	}
	e.syncStats()
	e.warnUnrecorded()
	return werr
}
