package objstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// store is the bucket of a Location, with the requests the output makes,
// each tried again after transient failures.
type store struct {
	c   *s3.Client
	loc Location
	log *slog.Logger

	uploaded, retries, parts, objects, failures atomic.Int64
	latency                                     atomic.Int64 // ns, the last part's
}

// attemptTimeout bounds one request (a part of 8 MiB needs well under it).
const attemptTimeout = 2 * time.Minute

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
		err = storeError(op, s.loc.object(key), err)
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
	_, err := s.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.loc.Bucket})
	if err != nil {
		err = storeError("check bucket", "s3://"+s.loc.Bucket, err)
		var se *StoreError
		if errors.As(err, &se) && se.Status == 404 {
			se.Code = "NoSuchBucket"
		}
	}
	return err
}

// exists reports whether key names an object.
func (s *store) exists(ctx context.Context, key string) (bool, error) {
	var found bool
	err := s.do(ctx, "look for", key, func(ctx context.Context) error {
		_, err := s.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.loc.Bucket, Key: &key})
		var se *StoreError
		if e := storeError("", "", err); errors.As(e, &se) && se.Status == 404 {
			found = false
			return nil
		}
		found = err == nil
		return err
	})
	return found, err
}

func (s *store) create(ctx context.Context, key, contentType string) (string, error) {
	var id string
	err := s.do(ctx, "start upload", key, func(ctx context.Context) error {
		out, err := s.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.loc.Bucket, Key: &key, ContentType: &contentType,
			Metadata: map[string]string{"moq-export": "recording"}})
		if err == nil {
			id = aws.ToString(out.UploadId)
		}
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
		out, err := s.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &s.loc.Bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
			Body: b, ContentLength: aws.Int64(b.size)})
		if err == nil {
			etag = aws.ToString(out.ETag)
			s.latency.Store(int64(time.Since(began)))
		}
		return err
	})
	if err == nil {
		s.uploaded.Add(b.size)
		s.parts.Add(1)
	}
	return etag, err
}

func (s *store) complete(ctx context.Context, key, id string, parts []partRec) error {
	cp := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.N), ETag: aws.String(p.ETag)}
	}
	return s.do(ctx, "complete", key, func(ctx context.Context) error {
		_, err := s.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &s.loc.Bucket, Key: &key, UploadId: &id,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}})
		return err
	})
}

func (s *store) put(ctx context.Context, key, contentType string, b *body) error {
	err := s.do(ctx, "upload", key, func(ctx context.Context) error {
		if _, err := b.Seek(0, 0); err != nil {
			return err
		}
		began := time.Now()
		_, err := s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.loc.Bucket, Key: &key, Body: b, ContentLength: aws.Int64(b.size), ContentType: &contentType})
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
		_, err := s.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.loc.Bucket, Key: &key, UploadId: &id})
		return err
	})
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
	in := &s3.ListMultipartUploadsInput{Bucket: &s.loc.Bucket, Prefix: &prefix}
	for {
		var out *s3.ListMultipartUploadsOutput
		err := s.do(ctx, "list uploads under", prefix, func(ctx context.Context) (err error) {
			out, err = s.c.ListMultipartUploads(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, u := range out.Uploads {
			ups = append(ups, upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Started: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	for i := range ups {
		u := &ups[i]
		in := &s3.ListPartsInput{Bucket: &s.loc.Bucket, Key: &u.Key, UploadId: &u.ID}
		for {
			var out *s3.ListPartsOutput
			err := s.do(ctx, "list parts of", u.Key, func(ctx context.Context) (err error) {
				out, err = s.c.ListParts(ctx, in)
				return err
			})
			if err != nil {
				return nil, err
			}
			for _, p := range out.Parts {
				u.Parts = append(u.Parts, partRec{N: aws.ToInt32(p.PartNumber), Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag)})
				if t := aws.ToTime(p.LastModified); t.After(u.LastPart) {
					u.LastPart = t
				}
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.PartNumberMarker = out.NextPartNumberMarker
		}
	}
	return ups, nil
}
