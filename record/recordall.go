package record

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// RecordAll records every broadcast src announces, each to its own files,
// until ctx ends or the source does. With Duration it follows the
// announcements for that much wall-clock time from the call (the source's
// setup, a relay session's connection and SETUP, included), then waits for
// those recordings to end; a window in which nothing was announced is an
// *EmptyWindowError, and a run that ended by itself (its window, or the
// source's end) in which every recording failed is a
// *RecordingsFailedError (some failed and some ended well: nil, the
// failures logged). With Wait it gives up when nothing is announced in
// that time. A broadcast announced again while its recording runs is
// recorded again after it.
func (r *Recorder) RecordAll(ctx context.Context, src Source) error {
	return r.withProgress(func() error { return r.recordAll(ctx, src, r.opts.Duration) })
}

// admitRetry is how often RecordAll asks Options.Admit again about the
// broadcasts it refused.
var admitRetry = time.Second

// Restarting a recording a full disk ended: by a failed write, or first
// by the MinFreeBytes cut (see recordAll). The first
// restart comes writeRetryMin after the failure, each next one after twice
// the wait before (at most writeRetryMax), and only once the output's disk
// has writeRetryFree bytes free (or Options.MinFreeBytes, when more): a
// disk that is still full costs a look at its free space, not a new file.
// A recording that ran writeRetryMax before it failed starts the waits
// afresh.
var (
	writeRetryMin  = 2 * time.Second
	writeRetryMax  = time.Minute
	writeRetryFree = int64(16 << 20)
)

// writeRetry is the restart of a recording a full disk ended.
type writeRetry struct {
	attempt int // restarts so far in this run of failures
	wait    time.Duration
	due     time.Time // not before
	dir     string    // where the failed file was, for its free space
	noted   bool      // the wait for free space was logged
	waiting bool      // for due and room; false once restarted
}

// recordAll is RecordAll following announcements for follow (0: until ctx
// ends).
func (r *Recorder) recordAll(ctx context.Context, src Source, follow time.Duration) error {
	if err := r.checkPackages(); err != nil {
		return err
	}
	fctx, stop := ctx, context.CancelFunc(func() {})
	if follow > 0 {
		fctx, stop = context.WithTimeout(ctx, follow)
	}
	defer stop()
	feed, err := src.Announced(fctx)
	if err != nil {
		return fmt.Errorf("following announcements: %w; check the URL and the token, and that the relay is up", err)
	}
	defer feed.Close()
	var firstSeen atomic.Bool
	waitCtx, waitStop := context.WithCancel(fctx)
	defer waitStop()
	if r.opts.Wait > 0 {
		t := time.AfterFunc(r.opts.Wait, waitStop)
		defer t.Stop()
	}
	t := time.AfterFunc(WaitNotice, func() {
		if !firstSeen.Load() {
			r.waiting(Waiting{Origin: r.opts.Origin, Wait: r.opts.Wait})
		}
	})
	defer t.Stop()
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		running = map[string]bool{}
		again   = map[string]bool{} // restarted while its recording ran
		// failOrder are the broadcasts a failed write ended a recording
		// of, in that order: RecordAll returns the first such error no
		// restart recovered (unrecovered) at its end.
		failOrder []string
		// deferred are the announced broadcasts Admit refused: tried
		// again every admitRetry while announced, so that a moment of
		// overload delays them instead of losing them.
		deferred = map[string]bool{}
		// announced are the broadcasts the source announces now; retries
		// are the recordings a full disk ended, restarted into new
		// files once the disk has room again (writeRetry), while their
		// broadcast is announced; unrecovered holds the write error of
		// each whose last recording ended by it.
		announced   = map[string]bool{}
		retries     = map[string]*writeRetry{}
		unrecovered = map[string]error{}
		// endedWell counts the recordings that ended without an error
		// (or with ctx); failed holds the error of each broadcast whose
		// last recording failed, in failedOrder: a run in which every
		// recording failed is a RecordingsFailedError, not nil.
		endedWell   int
		failed      = map[string]error{}
		failedOrder []string
	)
	// start starts the recording of path, or notes to start it again
	// after the one running; it reports whether it did either.
	start := func(path string) bool {
		mu.Lock()
		defer mu.Unlock()
		if running[path] {
			again[path] = true
			return true
		}
		release, err := r.reserve()
		if err != nil {
			le, _ := errors.AsType[*LimitError](err)
			overload := le != nil && le.Limit == LimitOverload
			if !overload || !deferred[path] {
				if overload {
					r.log.Warn("refused a broadcast for now; it starts once the recorder catches up", "broadcast", path, "publisher", peerOf(src), "reason", err)
				} else {
					r.log.Warn("refused a broadcast", "broadcast", path, "publisher", peerOf(src), "reason", err)
				}
				if r.opts.OnRefused != nil {
					r.opts.OnRefused(path, err)
				}
			}
			if overload {
				deferred[path] = true
			} else {
				delete(deferred, path)
			}
			return false
		}
		delete(deferred, path)
		running[path] = true
		wg.Add(1)
		// Each recording (and each again) is started in a goroutine of
		// its own, which ends once the recording waits for media; the
		// recording's end runs in the goroutine that ended it.
		var launch func()
		launch = func() {
			r.log.Info("recording", "broadcast", path)
			began := time.Now()
			rc := r.newRecording(ctx, src, path)
			rc.run(func(err error) {
				if err != nil && ctx.Err() == nil {
					r.log.Error("recording failed", "broadcast", path, "err", err)
				}
				mu.Lock()
				if err != nil && ctx.Err() == nil {
					if _, seen := failed[path]; !seen {
						failedOrder = append(failedOrder, path)
					}
					failed[path] = err
				} else {
					endedWell++
				}
				// A full disk ends a recording by a failed write, or first
				// (--min-free) by a cut when the free space fell below
				// Options.MinFreeBytes: either is restarted once the disk
				// has room again.
				full := ""
				we, failedWrite := errors.AsType[*WriteError](err)
				if failedWrite {
					full = we.Path
					if _, seen := unrecovered[path]; !seen {
						failOrder = append(failOrder, path)
					}
					unrecovered[path] = err
				} else if le, ok := errors.AsType[*LimitError](context.Cause(rc.ctx)); ok && le.Limit == LimitFreeBytes {
					full = le.Path
				}
				if full != "" {
					if ctx.Err() == nil && fctx.Err() == nil && !again[path] {
						rt := retries[path]
						if rt == nil || time.Since(began) >= writeRetryMax {
							rt = &writeRetry{wait: writeRetryMin}
							retries[path] = rt
						} else {
							rt.wait = min(2*rt.wait, writeRetryMax)
						}
						rt.due, rt.dir, rt.noted, rt.waiting = time.Now().Add(rt.wait), full, false, true
						r.log.Warn("a full disk ended the recording; it starts again in new files once the disk has room",
							"broadcast", path, "in", rt.wait.Round(time.Millisecond), "restarts", rt.attempt)
					}
				} else {
					// Not a full disk: nothing to restart, and the
					// restart, if this was one, recorded.
					delete(unrecovered, path)
					delete(retries, path)
				}
				if again[path] && ctx.Err() == nil {
					delete(again, path)
					mu.Unlock()
					go launch()
					return
				}
				delete(running, path)
				mu.Unlock()
				release()
				wg.Done()
			})
		}
		go launch()
		return true
	}
	// restartDue starts the recordings a full disk ended whose wait is
	// over, if their broadcast is still announced and the disk has room.
	restartDue := func() {
		mu.Lock()
		var due []string
		for p, rt := range retries {
			switch {
			case !announced[p]:
				delete(retries, p)
			case rt.waiting && !running[p] && time.Now().After(rt.due) && r.roomToRetry(p, rt):
				due = append(due, p)
			}
		}
		mu.Unlock()
		for _, p := range due {
			mu.Lock()
			rt := retries[p]
			if rt == nil || !rt.waiting || running[p] {
				mu.Unlock()
				continue
			}
			rt.waiting = false
			mu.Unlock()
			if !start(p) {
				// Refused (a limit): tried again after another wait.
				mu.Lock()
				rt.wait = min(2*rt.wait, writeRetryMax)
				rt.due, rt.waiting = time.Now().Add(rt.wait), true
				mu.Unlock()
				continue
			}
			mu.Lock()
			rt.attempt++
			n := rt.attempt
			mu.Unlock()
			r.restarts.Add(1)
			r.log.Warn("restarting a recording a full disk ended", "broadcast", p, "restart", n)
		}
	}
	stopRetry, retryDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(retryDone)
		t := time.NewTicker(min(admitRetry, writeRetryMin/2))
		defer t.Stop()
		for {
			select {
			case <-stopRetry:
				return
			case <-t.C:
			}
			if r.opts.Admit != nil {
				mu.Lock()
				paths := slices.Collect(maps.Keys(deferred))
				mu.Unlock()
				for _, p := range paths {
					start(p)
				}
			}
			restartDue()
		}
	}()
	var ferr error
	for {
		nctx := fctx
		if !firstSeen.Load() {
			nctx = waitCtx
		}
		an, err := feed.Next(nctx)
		if err != nil {
			if fctx.Err() == nil && waitCtx.Err() != nil {
				ferr = &WaitError{Origin: r.opts.Origin, Wait: r.opts.Wait}
			} else if fctx.Err() == nil {
				ferr = err
			}
			break
		}
		firstSeen.Store(true)
		mu.Lock()
		if an.Active {
			announced[an.Path] = true
			delete(retries, an.Path) // announced anew: it starts now
		} else {
			delete(announced, an.Path)
			delete(deferred, an.Path)
			delete(retries, an.Path)
		}
		mu.Unlock()
		if an.Active {
			start(an.Path)
		}
	}
	close(stopRetry)
	<-retryDone // no start after this
	wg.Wait()
	for _, p := range failOrder {
		// The first recording a failed write ended that no restart
		// recovered.
		if err := unrecovered[p]; err != nil {
			return fmt.Errorf("%w (the other recordings went on)", err)
		}
	}
	if ferr != nil && waitCtx.Err() != nil && fctx.Err() == nil {
		return ferr
	}
	if ferr != nil && !errors.Is(ferr, ErrSourceClosed) {
		return fmt.Errorf("following announcements: %w; the relay or publisher went away: start again to record what it announces next", ferr)
	}
	if follow > 0 && ctx.Err() == nil && fctx.Err() != nil && !firstSeen.Load() {
		// The window ended with nothing announced in it (a source still
		// setting up when it ended among the causes): nothing was
		// recorded, which is not a success.
		return &EmptyWindowError{Origin: r.opts.Origin, Window: follow}
	}
	if ctx.Err() == nil && endedWell == 0 && len(failedOrder) > 0 {
		// Broadcasts were announced and recorded, and every recording
		// failed: the run recorded nothing that ended well, which is not
		// a success either.
		e := &RecordingsFailedError{Broadcasts: failedOrder}
		for _, p := range failedOrder {
			e.Errs = append(e.Errs, failed[p])
		}
		return e
	}
	return ctx.Err()
}

// RecordAllFor is RecordAll following announcements for follow instead of
// Duration (0: until ctx ends): a listener that keeps accepting publishers
// uses 0.
func (r *Recorder) RecordAllFor(ctx context.Context, src Source, follow time.Duration) error {
	return r.withProgress(func() error { return r.recordAll(ctx, src, follow) })
}

// roomToRetry reports whether the disk of a recording a full disk ended
// has room again (writeRetry). A disk whose free space cannot be read is
// tried.
func (r *Recorder) roomToRetry(path string, rt *writeRetry) bool {
	need := max(writeRetryFree, r.opts.MinFreeBytes)
	free, err := r.freeSpace(rt.dir)
	if err != nil || free >= need {
		return true
	}
	if !rt.noted {
		rt.noted = true
		r.log.Warn("waiting for free space to restart a recording a full disk ended", "broadcast", path,
			"free", free, "need", need)
	}
	return false
}
