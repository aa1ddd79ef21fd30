package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/moq-export/moq-export/internal/service"
	"github.com/moq-export/moq-export/objstore"
)

// openStore opens the object-store output: the bucket is checked (a missing
// bucket or refused credentials end the run here, before anything is
// recorded), then what a recorder that died left in the spool for this
// bucket is completed.
func (a *app) openStore(ctx context.Context) (*objstore.Output, error) {
	c := a.cfg
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := objstore.Open(octx, c.Output, objstore.Options{SpoolDir: c.SpoolDir, SpoolMax: int64(c.SpoolMax), Overwrite: c.Overwrite, Logger: a.log})
	if err != nil {
		return nil, err
	}
	rec, err := out.Recover(octx)
	for _, r := range rec {
		form := "as recorded up to the crash (live form)"
		if r.Finished {
			form = "finished"
		}
		notice(a.log, fmt.Sprintf("completed %s (%d bytes, %s) from the spool of a recorder that stopped", r.URL, r.Size, form))
	}
	if err != nil {
		a.log.Warn("some objects in the spool could not be completed; they stay there for the next run", "err", err)
	}
	if a.retStore != nil {
		// The sweep at the start found nothing to list: sweep now.
		a.retStore.set(out)
		go a.svc.Sweep(time.Now())
	}
	if c.RecoverUploads > 0 {
		rec, err := out.RecoverStore(ctx, c.RecoverUploads)
		for _, r := range rec {
			what := "as recorded up to its last part"
			if r.WithoutHead {
				what = "its first part never left the lost spool: from its second part's first keyframe up to its last part"
			}
			notice(a.log, fmt.Sprintf("completed %s (%d bytes, %s) from the parts a recorder that stopped left in the store", r.URL, r.Size, what))
		}
		if err != nil {
			a.log.Warn("some unfinished uploads could not be completed", "err", err)
		}
	}
	return out, nil
}

// storeRetention is what --retention-age and --retention-size sweep for
// an object-store -o: the objects under its key's prefix (the service
// starts before the store is open; until then a sweep lists nothing).
type storeRetention struct {
	mu  sync.Mutex
	out *objstore.Output
}

func (r *storeRetention) set(out *objstore.Output) {
	r.mu.Lock()
	r.out = out
	r.mu.Unlock()
}

func (r *storeRetention) get() (*objstore.Output, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		return nil, errors.New("the object store is not open yet")
	}
	return r.out, nil
}

func (r *storeRetention) List(ctx context.Context) ([]service.Kept, error) {
	out, err := r.get()
	if err != nil {
		return nil, err
	}
	objs, err := out.List(ctx)
	if err != nil {
		return nil, err
	}
	kept := make([]service.Kept, len(objs))
	for i, o := range objs {
		kept[i] = service.Kept{Name: o.URL, Size: o.Size, Modified: o.Modified}
	}
	return kept, nil
}

func (r *storeRetention) Delete(ctx context.Context, name string) error {
	out, err := r.get()
	if err != nil {
		return err
	}
	return out.Delete(ctx, name)
}
