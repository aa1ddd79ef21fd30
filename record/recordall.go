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
// announcements for that much wall-clock time, then waits for those
// recordings to end. With Wait it gives up when nothing is announced in
// that time. A broadcast announced again while its recording runs is
// recorded again after it.
func (r *Recorder) RecordAll(ctx context.Context, src Source) error {
	return r.withProgress(ctx, func() error { return r.recordAll(ctx, src, r.opts.Duration) })
}

// admitRetry is how often RecordAll asks Options.Admit again about the
// broadcasts it refused.
var admitRetry = time.Second

// recordAll is RecordAll following announcements for follow (0: until ctx
// ends).
func (r *Recorder) recordAll(ctx context.Context, src Source, follow time.Duration) error {
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
		// writeFailed is the first output write error: that recording
		// stopped, the others went on, and RecordAll returns it at its end.
		writeFailed error
		// deferred are the announced broadcasts Admit refused: tried
		// again every admitRetry while announced, so that a moment of
		// overload delays them instead of losing them.
		deferred = map[string]bool{}
	)
	start := func(path string) {
		mu.Lock()
		defer mu.Unlock()
		if running[path] {
			again[path] = true
			return
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
			return
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
			r.newRecording(ctx, src, path).run(func(err error) {
				if err != nil && ctx.Err() == nil {
					r.log.Error("recording failed", "broadcast", path, "err", err)
				}
				mu.Lock()
				if _, ok := errors.AsType[*WriteError](err); ok && writeFailed == nil {
					writeFailed = err
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
	}
	stopRetry, retryDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(retryDone)
		if r.opts.Admit == nil {
			return
		}
		t := time.NewTicker(admitRetry)
		defer t.Stop()
		for {
			select {
			case <-stopRetry:
				return
			case <-t.C:
			}
			mu.Lock()
			paths := slices.Collect(maps.Keys(deferred))
			mu.Unlock()
			for _, p := range paths {
				start(p)
			}
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
		if an.Active {
			start(an.Path)
		} else {
			mu.Lock()
			delete(deferred, an.Path)
			mu.Unlock()
		}
	}
	close(stopRetry)
	<-retryDone // no start after this
	wg.Wait()
	if writeFailed != nil {
		return fmt.Errorf("%w (the other recordings went on)", writeFailed)
	}
	if ferr != nil && waitCtx.Err() != nil && fctx.Err() == nil {
		return ferr
	}
	if ferr != nil && !errors.Is(ferr, ErrSourceClosed) {
		return fmt.Errorf("following announcements: %w; the relay or publisher went away: start again to record what it announces next", ferr)
	}
	return ctx.Err()
}

// RecordAllFor is RecordAll following announcements for follow instead of
// Duration (0: until ctx ends): a listener that keeps accepting publishers
// uses 0.
func (r *Recorder) RecordAllFor(ctx context.Context, src Source, follow time.Duration) error {
	return r.withProgress(ctx, func() error { return r.recordAll(ctx, src, follow) })
}
