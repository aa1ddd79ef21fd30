package catalog

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/moq-export/moq-export/model"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Track forces the catalog track name (TrackName, CompressedTrackName,
	// MSFTrackName or MSF00TrackName); "" means the names TracksFor the
	// broadcast's name gives, each tried when the one before is refused or
	// ends without a snapshot (the broadcast carries another).
	Track string
	// Ready, when set, is the ready set woken when the catalog track
	// receives something: a reader that polls many tracks (the export
	// engine) passes its own and calls Poll when woken. Nil gives the
	// watcher its own, which Next waits on.
	Ready *model.ReadySet
	// Logger receives the snapshots skipped as malformed. Nil discards.
	Logger *slog.Logger
}

// Watcher follows the catalog of one broadcast. It is used by one
// goroutine.
type Watcher struct {
	b      *model.Broadcast
	cons   *model.Consumer
	ready  *model.ReadySet
	log    *slog.Logger
	reader *Reader
	track  string
	// fallback are the catalog tracks to try, in order, when track ends
	// in an error before its first snapshot (none when Track was forced).
	fallback []string
	// firstErr is the error the first catalog track ended with, the end
	// when no track of the list gave a snapshot.
	firstErr error

	// latest is the newest snapshot not returned yet; once returned the
	// watcher lets it go (its reader owns it), and got says one came.
	latest  *Catalog
	got     bool
	lastErr error
	ended   error
}

// Watch subscribes the catalog track of b and returns a watcher. It works
// with any model broadcast: one of a remote peer (package subscribe), or a
// local one.
func Watch(b *model.Broadcast, opts WatchOptions) (*Watcher, error) {
	names := []string{opts.Track}
	if opts.Track == "" {
		names = TracksFor(b.Name())
	}
	var (
		t     *model.Track
		err   error
		first error
		name  string
	)
	for len(names) > 0 {
		name, names = names[0], names[1:]
		// A broadcast may refuse a catalog track at once (a local one
		// that has another).
		if t, err = b.Track(name); err == nil {
			break
		}
		if first == nil {
			first = err
		}
	}
	if err != nil {
		return nil, fmt.Errorf("catalog of %q: %w", b.Name(), first)
	}
	w := &Watcher{b: b, cons: t.Subscribe(0), ready: opts.Ready, log: opts.Logger, reader: NewReader(name), track: name,
		fallback: names, firstErr: first}
	if w.ready == nil {
		w.ready = model.NewReadySet()
	}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	w.cons.Watch(w.ready)
	return w, nil
}

// Track returns the name of the catalog track the watcher reads now.
func (w *Watcher) Track() string { return w.track }

// Poll returns, without waiting, the newest snapshot not returned yet, or
// nil when there is none. Snapshots overtaken by newer ones are never
// returned; a malformed one is skipped. Once the catalog track ended and
// its last snapshot was returned, Poll returns the track's error, or
// io.EOF for a clean end (wrapping the last malformed snapshot's error
// when no valid one came).
func (w *Watcher) Poll() (*Catalog, error) {
	w.drain()
	if c := w.latest; c != nil {
		w.latest = nil
		return c, nil
	}
	return nil, w.ended
}

// Next is Poll that waits, until ctx ends, for a snapshot or the end. It
// needs the watcher's own ready set (WatchOptions.Ready nil).
func (w *Watcher) Next(ctx context.Context) (*Catalog, error) {
	for {
		if c, err := w.Poll(); c != nil || err != nil {
			return c, err
		}
		select {
		case <-w.ready.Wakeup():
			w.ready.Take(nil)
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
}

// Close stops watching.
func (w *Watcher) Close() { w.cons.Close() }

// drain reads every available event and keeps the newest snapshot.
func (w *Watcher) drain() {
	for w.ended == nil {
		ev, ok := w.cons.Next()
		if !ok {
			return
		}
		switch ev.Kind {
		case model.EventEnd:
			if ev.Err != nil && w.firstErr == nil {
				w.firstErr = ev.Err
			}
			if ev.Err != nil && !w.got && w.lastErr == nil && w.switchTrack(ev.Err) {
				continue
			}
			w.ended = ev.Err
			if ev.Err != nil && !w.got && w.lastErr == nil {
				w.ended = w.firstErr
			}
			if w.ended == nil {
				w.ended = io.EOF
			}
			if w.lastErr != nil && !w.got {
				w.ended = fmt.Errorf("catalog: %w (track ended: %w)", w.lastErr, w.ended)
			}
		case model.EventDiscontinuity:
			w.reader.Reset()
		case model.EventFrame:
			if err := w.frame(ev); err != nil {
				w.lastErr = err
				w.log.Warn("catalog update ignored", "err", err)
			}
		}
	}
}

// switchTrack follows the next catalog track of the fallback list after
// the current one ended with err before any snapshot; false when none can
// be had.
func (w *Watcher) switchTrack(err error) bool {
	for len(w.fallback) > 0 {
		name := w.fallback[0]
		w.fallback = w.fallback[1:]
		t, terr := w.b.Track(name)
		if terr != nil {
			continue
		}
		w.log.Info("catalog track unavailable, reading another one", "broadcast", w.b.Name(), "track", w.track, "err", err, "instead", name)
		w.cons.Close()
		w.cons, w.reader, w.track = t.Subscribe(0), NewReader(name), name
		w.cons.Watch(w.ready)
		return true
	}
	return false
}

// frame applies one catalog frame.
func (w *Watcher) frame(ev model.Event) error {
	c, err := w.reader.Frame(ev.Group, ev.Keyframe, ev.Frame.Payload)
	if err != nil {
		return err
	}
	w.latest, w.got = c, true
	return nil
}
