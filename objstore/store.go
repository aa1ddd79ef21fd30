package objstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// backend is one kind of object store (S3, GCS, Azure Blob) behind the
// requests the output makes. Each method is one attempt: store.do tries
// again after transient failures. A multipart upload is the store's own
// (S3) or made of what it has (GCS: part objects composed at the finish;
// Azure: blocks staged, then committed): create, uploadPart, complete,
// abort and uploads keep that difference here.
type backend interface {
	// classify reads the HTTP status and the store's error code of err
	// (0, "" when the store never answered).
	classify(err error) (status int, code string)
	checkBucket(ctx context.Context) error
	exists(ctx context.Context, key string) (bool, error)
	// create starts an upload of key and returns its id.
	create(ctx context.Context, key, contentType string) (string, error)
	// uploadPart stores part n (from 1) and returns what complete needs.
	uploadPart(ctx context.Context, key, id string, n int32, b *body) (string, error)
	// complete makes key the parts, in order, and drops what is left of
	// the upload.
	complete(ctx context.Context, key, id, contentType string, parts []partRec) error
	abort(ctx context.Context, key, id string) error
	put(ctx context.Context, key, contentType string, b *body) error
	putBytes(ctx context.Context, key string, data []byte) error
	// get returns errNotFound when there is no such object.
	get(ctx context.Context, key string) ([]byte, error)
	// list lists the objects under prefix (never the parts of uploads).
	list(ctx context.Context, prefix string) ([]objectInfo, error)
	remove(ctx context.Context, key string) error
	// uploads lists the unfinished uploads of keys under prefix, with
	// their parts.
	uploads(ctx context.Context, prefix string) ([]upload, error)
}

// objectInfo is an object of a listing.
type objectInfo struct {
	Key      string
	Size     int64
	Modified time.Time
}

// errNotFound is what backend.get returns for a missing object.
var errNotFound = errors.New("no such object")

// store is the bucket of a Location, with the requests the output makes,
// each tried again after transient failures.
type store struct {
	b   backend
	loc Location
	log *slog.Logger

	uploaded, retries, parts, objects, failures atomic.Int64
	latency                                     atomic.Int64 // ns, the last part's
}

// newStore makes the client of the location's scheme.
func newStore(ctx context.Context, loc Location, log *slog.Logger) (*store, error) {
	var b backend
	var err error
	switch loc.Scheme {
	case "gs":
		b, err = newGCS(ctx, loc)
	case "az":
		b, err = newAzure(ctx, loc)
	default:
		b, err = newS3(ctx, loc)
	}
	if err != nil {
		return nil, err
	}
	return &store{b: b, loc: loc, log: log}, nil
}

// attemptTimeout bounds one request (a part of 8 MiB needs well under it).
const attemptTimeout = 2 * time.Minute

// wrap makes err of a request a *StoreError.
func (s *store) wrap(op, object string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	se := &StoreError{Op: op, Object: object, Err: err}
	se.Status, se.Code = s.b.classify(err)
	return se
}

// do runs fn until it succeeds, fails permanently, or ctx ends; between
// tries it waits retryWait (backoff with jitter).
func (s *store) do(ctx context.Context, op, key string, fn func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := fn(actx)
		cancel()
		if err == nil {
			return nil
		}
		err = s.wrap(op, s.loc.object(key), err)
		if ctx.Err() != nil {
			return fmt.Errorf("%w (gave up: %v)", err, context.Cause(ctx))
		}
		if permanent(err) {
			return err
		}
		s.retries.Add(1)
		wait := retryWait(attempt, rand.Float64())
		s.log.Debug("object store request failed; trying again", "op", op, "object", s.loc.object(key), "err", err, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %v)", err, context.Cause(ctx))
		case <-t.C:
		}
	}
}

func (s *store) checkBucket(ctx context.Context) error {
	err := s.wrap("check bucket", s.loc.bucketURL(), s.b.checkBucket(ctx))
	var se *StoreError
	if errors.As(err, &se) && se.Status == 404 {
		se.Code = "NoSuchBucket"
	}
	return err
}

// exists reports whether key names an object.
func (s *store) exists(ctx context.Context, key string) (bool, error) {
	var found bool
	err := s.do(ctx, "look for", key, func(ctx context.Context) (err error) {
		found, err = s.b.exists(ctx, key)
		return err
	})
	return found, err
}

func (s *store) create(ctx context.Context, key, contentType string) (string, error) {
	var id string
	err := s.do(ctx, "start upload", key, func(ctx context.Context) (err error) {
		id, err = s.b.create(ctx, key, contentType)
		return err
	})
	return id, err
}

func (s *store) uploadPart(ctx context.Context, key, id string, n int32, b *body) (string, error) {
	var etag string
	err := s.do(ctx, fmt.Sprintf("upload part %d of", n), key, func(ctx context.Context) error {
		if _, err := b.Seek(0, 0); err != nil {
			return err
		}
		began := time.Now()
		var err error
		etag, err = s.b.uploadPart(ctx, key, id, n, b)
		if err == nil {
			s.latency.Store(int64(time.Since(began)))
		}
		return err
	})
	if err == nil {
		s.uploaded.Add(b.size)
		if n != 0 { // part 0 is the file's header, not a part
			s.parts.Add(1)
		}
	}
	return etag, err
}

func (s *store) complete(ctx context.Context, key, id string, parts []partRec) error {
	return s.do(ctx, "complete", key, func(ctx context.Context) error {
		return s.b.complete(ctx, key, id, contentType(key), parts)
	})
}

func (s *store) put(ctx context.Context, key, contentType string, b *body) error {
	err := s.do(ctx, "upload", key, func(ctx context.Context) error {
		if _, err := b.Seek(0, 0); err != nil {
			return err
		}
		began := time.Now()
		err := s.b.put(ctx, key, contentType, b)
		if err == nil {
			s.latency.Store(int64(time.Since(began)))
		}
		return err
	})
	if err == nil {
		s.uploaded.Add(b.size)
		s.parts.Add(1)
	}
	return err
}

func (s *store) abort(ctx context.Context, key, id string) error {
	return s.do(ctx, "abort upload", key, func(ctx context.Context) error {
		return s.b.abort(ctx, key, id)
	})
}

// get reads an object; an error wrapping errNotFound when there is none.
func (s *store) get(ctx context.Context, key string) ([]byte, error) {
	var data []byte
	missing := false
	err := s.do(ctx, "read", key, func(ctx context.Context) (err error) {
		data, err = s.b.get(ctx, key)
		if errors.Is(err, errNotFound) {
			missing, err = true, nil
		}
		return err
	})
	if err == nil && missing {
		return nil, fmt.Errorf("%s: %w", s.loc.object(key), errNotFound)
	}
	return data, err
}

func (s *store) list(ctx context.Context, prefix string) ([]objectInfo, error) {
	var objs []objectInfo
	err := s.do(ctx, "list", prefix, func(ctx context.Context) (err error) {
		objs, err = s.b.list(ctx, prefix)
		return err
	})
	return objs, err
}

func (s *store) remove(ctx context.Context, key string) error {
	return s.do(ctx, "delete", key, func(ctx context.Context) error { return s.b.remove(ctx, key) })
}

// upload is an unfinished multipart upload of the bucket.
type upload struct {
	Key, ID  string
	Started  time.Time
	Parts    []partRec
	LastPart time.Time
}

// unfinished lists the multipart uploads under prefix, with their parts.
func (s *store) unfinished(ctx context.Context, prefix string) ([]upload, error) {
	var ups []upload
	err := s.do(ctx, "list uploads under", prefix, func(ctx context.Context) (err error) {
		ups, err = s.b.uploads(ctx, prefix)
		return err
	})
	return ups, err
}
