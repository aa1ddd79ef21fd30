package subscribe

import (
	"context"
	"fmt"
	"io"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// CatalogOptions configure WatchCatalog.
type CatalogOptions struct {
	// Track forces the catalog track name (catalog.json, catalog.json.z or
	// catalog). Default: catalog for broadcast names ending in ".msf",
	// otherwise catalog.json.
	Track string
}

// CatalogWatcher follows the catalog of one broadcast. It is used by one
// goroutine.
type CatalogWatcher struct {
	track string
	cons  *model.Consumer
	ready *model.ReadySet

	reader  *catalog.Reader
	latest  *catalog.Catalog
	fresh   bool
	lastErr error
	ended   error
}

// WatchCatalog subscribes the catalog track of b and returns a watcher.
// It works with any model broadcast: one from Session.Broadcast, or a local
// one.
func WatchCatalog(b *model.Broadcast, opts CatalogOptions) (*CatalogWatcher, error) {
	name := opts.Track
	if name == "" {
		name = catalog.TrackFor(b.Name())
	}
	t, err := b.Track(name)
	if err != nil {
		return nil, fmt.Errorf("catalog of %q: %w", b.Name(), err)
	}
	w := &CatalogWatcher{track: name, cons: t.Subscribe(0), ready: model.NewReadySet(), reader: catalog.NewReader(name)}
	w.cons.Watch(w.ready)
	return w, nil
}

// Next returns the newest catalog snapshot not returned yet, waiting for
// one until ctx ends. Snapshots overtaken by newer ones are never returned;
// a malformed snapshot is skipped (Next returns it as an error only when
// nothing valid follows and the track ends). After the catalog track ends,
// Next returns its error, or io.EOF for a clean end.
func (w *CatalogWatcher) Next(ctx context.Context) (*catalog.Catalog, error) {
	for {
		w.drain()
		if w.fresh {
			w.fresh = false
			return w.latest, nil
		}
		if w.ended != nil {
			return nil, w.ended
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
func (w *CatalogWatcher) Close() { w.cons.Close() }

// drain reads every available event and keeps the newest snapshot.
func (w *CatalogWatcher) drain() {
	for w.ended == nil {
		ev, ok := w.cons.Next()
		if !ok {
			return
		}
		switch ev.Kind {
		case model.EventEnd:
			w.ended = ev.Err
			if w.ended == nil {
				w.ended = io.EOF
			}
			if w.lastErr != nil && !w.fresh && w.latest == nil {
				w.ended = fmt.Errorf("catalog: %w (track ended: %w)", w.lastErr, w.ended)
			}
		case model.EventDiscontinuity:
			w.reader.Reset()
		case model.EventFrame:
			if err := w.frame(ev); err != nil {
				w.lastErr = err
			}
		}
	}
}

// frame applies one catalog frame.
func (w *CatalogWatcher) frame(ev model.Event) error {
	c, err := w.reader.Frame(ev.Group, ev.Keyframe, ev.Frame.Payload)
	if err != nil {
		return err
	}
	w.latest, w.fresh = c, true
	return nil
}
