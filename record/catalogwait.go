package record

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

// catalogSlotHold is how long a recording keeps its catalog fetch place
// while no catalog comes.
const catalogSlotHold = 5 * time.Second

// waitCatalog waits for the first catalog of bc: at most Wait, saying once
// what it waits for when that takes longer than WaitNotice.
func (r *Recorder) waitCatalog(ctx context.Context, bc *model.Broadcast) (*catalog.Catalog, error) {
	name := bc.Name()
	wctx, cancel := ctx, context.CancelFunc(func() {})
	if r.opts.Wait > 0 {
		wctx, cancel = context.WithTimeout(ctx, r.opts.Wait)
	}
	defer cancel()
	t := time.AfterFunc(WaitNotice, func() {
		r.waiting(Waiting{Broadcast: name, Origin: r.opts.Origin, Wait: r.opts.Wait})
	})
	defer t.Stop()
	var cat *catalog.Catalog
	release, err := r.catalogSlot(wctx)
	if err == nil {
		cat, err = firstCatalogWithRenditions(wctx, bc, func() {
			release() // a catalog came, without renditions yet
			r.notice(fmt.Sprintf("broadcast %q has no renditions in its catalog yet; waiting up to %v for them (a browser publisher adds them once its encoders run)", name, emptyCatalogWait))
		})
		release()
	}
	switch {
	case err == nil:
		return cat, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case wctx.Err() != nil:
		return nil, &WaitError{Broadcast: name, Origin: r.opts.Origin, Wait: r.opts.Wait}
	}
	return nil, &CatalogError{Broadcast: name, Err: err}
}

// catalogSlot waits for a place among the first-catalog fetches and
// returns the function that gives it back (safe to call more than once).
// The place is given back by itself after slotHold, so that broadcasts
// that never send a catalog cannot hold every place.
func (r *Recorder) catalogSlot(ctx context.Context) (release func(), err error) {
	r.slotWaiters.Add(1)
	select {
	case r.catalogSlots <- struct{}{}:
		r.slotWaiters.Add(-1)
	case <-ctx.Done():
		r.slotWaiters.Add(-1)
		return nil, ctx.Err()
	}
	var once sync.Once
	give := func() { once.Do(func() { <-r.catalogSlots }) }
	t := time.AfterFunc(r.slotHold, give)
	return func() {
		t.Stop()
		give()
	}, nil
}

// emptyCatalogWait bounds the wait for renditions after a catalog without
// any: a browser publisher (@moq/publish) publishes its catalog before its
// camera and encoders run, then adds them.
const emptyCatalogWait = 15 * time.Second

// firstCatalogWithRenditions returns the first catalog snapshot of b that
// lists a rendition. After one that lists none it says so (empty) and
// waits at most emptyCatalogWait for a better one, then returns the empty
// one (Plan refuses it, saying why).
func firstCatalogWithRenditions(ctx context.Context, b *model.Broadcast, empty func()) (*catalog.Catalog, error) {
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	cat, err := w.Next(ctx)
	if err != nil || len(cat.Renditions()) > 0 {
		return cat, err
	}
	empty()
	wctx, cancel := context.WithTimeout(ctx, emptyCatalogWait)
	defer cancel()
	for {
		next, err := w.Next(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return cat, nil
		}
		if cat = next; len(cat.Renditions()) > 0 {
			return cat, nil
		}
	}
}

// FirstCatalog waits for the first catalog snapshot of b (catalog.json, or
// the MSF catalog for .msf names) and returns it.
func FirstCatalog(ctx context.Context, b *model.Broadcast) (*catalog.Catalog, error) {
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return w.Next(ctx)
}
