package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/moq-export/moq-export/archive"
)

// ArchiveStore returns the archive.Store of an s3:// URL: the objects of
// an archive (package archive) under the URL's key, a prefix, in its
// bucket. Each object is one PutObject (never seen torn: the store makes
// it visible whole); every request is tried again after transient
// failures, as the output's are, until ctx of the call ends. The bucket
// must exist.
func ArchiveStore(ctx context.Context, rawURL string, log *slog.Logger) (archive.Store, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := newClient(ctx, loc)
	if err != nil {
		return nil, err
	}
	s := &store{c: c, loc: loc, log: log}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	return &archiveStore{s: s, prefix: strings.Trim(loc.Key, "/")}, nil
}

type archiveStore struct {
	s      *store
	prefix string
}

func (a *archiveStore) key(k string) string {
	if a.prefix == "" {
		return k
	}
	return a.prefix + "/" + k
}

func (a *archiveStore) Put(ctx context.Context, k string, data []byte) error {
	key := a.key(k)
	return a.s.do(ctx, "put", key, func(ctx context.Context) error {
		_, err := a.s.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &a.s.loc.Bucket, Key: &key,
			Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
		return err
	})
}

func (a *archiveStore) Get(ctx context.Context, k string) ([]byte, error) {
	key := a.key(k)
	var out []byte
	missing := false
	err := a.s.do(ctx, "get", key, func(ctx context.Context) error {
		r, err := a.s.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &a.s.loc.Bucket, Key: &key})
		var se *StoreError
		if e := storeError("", "", err); errors.As(e, &se) && se.Status == 404 {
			missing = true
			return nil
		}
		if err != nil {
			return err
		}
		defer r.Body.Close()
		out, err = io.ReadAll(r.Body)
		return err
	})
	if err != nil {
		return nil, err
	}
	if missing {
		return nil, fmt.Errorf("%s: %w", a.s.loc.object(key), fs.ErrNotExist)
	}
	return out, nil
}

func (a *archiveStore) List(ctx context.Context, prefix string) ([]string, error) {
	full := a.key(prefix)
	if prefix == "" && a.prefix != "" {
		full = a.prefix + "/"
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(a.s.c, &s3.ListObjectsV2Input{Bucket: &a.s.loc.Bucket, Prefix: &full})
	for p.HasMorePages() {
		var page *s3.ListObjectsV2Output
		err := a.s.do(ctx, "list", full, func(ctx context.Context) error {
			var err error
			page, err = p.NextPage(ctx)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if a.prefix != "" {
				k = strings.TrimPrefix(k, a.prefix+"/")
			}
			keys = append(keys, k)
		}
	}
	return keys, nil
}

func (a *archiveStore) Delete(ctx context.Context, k string) error {
	key := a.key(k)
	return a.s.do(ctx, "delete", key, func(ctx context.Context) error {
		_, err := a.s.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &a.s.loc.Bucket, Key: &key})
		return err
	})
}
