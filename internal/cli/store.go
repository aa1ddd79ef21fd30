package cli

import (
	"context"
	"fmt"
	"time"

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
	if c.RecoverUploads > 0 {
		rec, err := out.RecoverStore(ctx, c.RecoverUploads)
		for _, r := range rec {
			notice(a.log, fmt.Sprintf("completed %s (%d bytes, as recorded up to its last part) from the parts a recorder that stopped left in the store", r.URL, r.Size))
		}
		if err != nil {
			a.log.Warn("some unfinished uploads could not be completed", "err", err)
		}
	}
	return out, nil
}
