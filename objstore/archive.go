package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"

	"github.com/moq-export/moq-export/archive"
)

// ArchiveStore returns the archive.Store of an object-store URL: the objects of
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
	s, err := newStore(ctx, loc, log)
	if err != nil {
		return nil, err
	}
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
	return a.s.do(ctx, "put", key, func(ctx context.Context) error { return a.s.b.putBytes(ctx, key, data) })
}

func (a *archiveStore) Get(ctx context.Context, k string) ([]byte, error) {
	data, err := a.s.get(ctx, a.key(k))
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%w: %w", err, fs.ErrNotExist)
	}
	return data, err
}

func (a *archiveStore) List(ctx context.Context, prefix string) ([]string, error) {
	full := a.key(prefix)
	if prefix == "" && a.prefix != "" {
		full = a.prefix + "/"
	}
	objs, err := a.s.list(ctx, full)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		k := o.Key
		if a.prefix != "" {
			k = strings.TrimPrefix(k, a.prefix+"/")
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func (a *archiveStore) Delete(ctx context.Context, k string) error {
	return a.s.remove(ctx, a.key(k))
}
