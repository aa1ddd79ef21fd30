package record

import (
	"context"
	"errors"
	"fmt"

	"github.com/moq-export/moq-export/subscribe"
)

// Run records what the options say (Broadcast, or every broadcast with
// RecordAll, from the Session or the URL) until it ends or ctx does, and
// returns the files it wrote. Cancelling ctx finishes the files first.
func Run(ctx context.Context, opts Options) ([]FileInfo, error) {
	if opts.Broadcast == "" && !opts.RecordAll {
		return nil, errors.New("record: Options.Broadcast is empty: name the broadcast to record, or set RecordAll")
	}
	sess := opts.Session
	if sess == nil {
		if opts.URL == "" {
			return nil, errors.New("record: Run needs Options.URL or Options.Session")
		}
		var err error
		dial := opts.Dial
		if dial.Logger == nil {
			dial.Logger = opts.Logger
		}
		if wantsObjects(opts.Output) {
			dial.Objects = true // an archive keeps the objects as received
		}
		if sess, err = subscribe.Dial(ctx, opts.URL, dial); err != nil {
			return nil, fmt.Errorf("record: connecting to %s: %w", subscribe.RedactURL(opts.URL), err)
		}
		defer sess.Close()
		if opts.Origin == "" {
			opts.Origin = "under " + subscribe.RedactURL(opts.URL)
		}
	}
	r, err := New(opts)
	if err != nil {
		return nil, err
	}
	src := SessionSource(sess)
	if opts.RecordAll {
		err = r.RecordAll(ctx, src)
	} else {
		err = r.Record(ctx, src, opts.Broadcast)
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil // stopped as asked, files finished
	}
	return r.Files(), err
}
