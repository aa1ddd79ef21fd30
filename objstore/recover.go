package objstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Recovered is an object Recover completed.
type Recovered struct {
	URL  string
	Size int64
	// Finished is true when the recording had ended cleanly (the object
	// is the finished file); false when its recorder died while recording
	// (the object is the live form: fragmented MP4, MKV and FLV without
	// duration, TS, up to the spool's last flush).
	Finished bool
}

// Recover completes, from the spool, the objects of this Output's bucket
// whose recorder died (its spool files are not locked by a running
// recorder): the head part and the tail come from the spool, the parts
// in between are those the store already took. What the recorder had
// written reaches the object up to its spool's last flush (at most 500 ms
// before the kill). Objects of other buckets are left for their Output.
// Each object is tried once; one that fails stays in the spool.
func (o *Output) Recover(ctx context.Context) ([]Recovered, error) {
	names, err := filepath.Glob(filepath.Join(o.opts.SpoolDir, "*.json"))
	if err != nil {
		return nil, err
	}
	var done []Recovered
	var errs []error
	for _, name := range names {
		r, err := o.recoverOne(ctx, strings.TrimSuffix(filepath.Base(name), ".json"))
		if errors.Is(err, errLocked) || errors.Is(err, errOtherBucket) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, r)
	}
	return done, errors.Join(errs...)
}

var errOtherBucket = errors.New("another bucket's")

func (o *Output) recoverOne(ctx context.Context, id string) (Recovered, error) {
	paths := pathsOf(o.opts.SpoolDir, id)
	m, err := readManifest(paths.manifest)
	if err != nil {
		return Recovered{}, err
	}
	if m.Bucket != o.loc.Bucket {
		return Recovered{}, errOtherBucket
	}
	rf, err := os.OpenFile(paths.media, os.O_RDWR, 0)
	if err != nil {
		return Recovered{}, fmt.Errorf("objstore: recover %s: %w", o.loc.object(m.Key), err)
	}
	defer rf.Close()
	if err := lock(rf); err != nil {
		return Recovered{}, err
	}
	st, err := rf.Stat()
	if err != nil {
		return Recovered{}, err
	}
	var head []byte
	if m.Closed && m.HeadFrom >= 0 {
		if head, err = os.ReadFile(paths.head); err != nil {
			return Recovered{}, fmt.Errorf("objstore: recover %s: the head of the finished MP4: %w", o.loc.object(m.Key), err)
		}
	}
	if !m.Closed || m.Final == 0 || m.Final > st.Size() {
		// Killed while recording: the spool file is the live form up to
		// its last flush.
		m.Final, head = st.Size(), nil
	}
	if m.HeadEnd == 0 || m.HeadEnd > m.Final {
		m.HeadEnd, m.Parts = m.Final, nil
	}
	size, err := o.finish(ctx, rf, m, head)
	if err != nil {
		return Recovered{}, fmt.Errorf("objstore: recover %s: %w", o.loc.object(m.Key), err)
	}
	o.st.objects.Add(1)
	paths.remove()
	return Recovered{URL: o.loc.object(m.Key), Size: size, Finished: m.Closed}, nil
}
