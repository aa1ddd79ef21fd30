package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/moq-export/moq-export/record"
)

var _ record.PackageOutput = (*Output)(nil)

// CreatePackage opens the package of broadcast (record.HLS) under the
// key the template expands to: a key ending in .m3u8 (or .mpd) names the
// multivariant playlist and its "directory" the prefix of every object of
// the package; another key is the prefix itself, with index.m3u8 under it.
// Each file of the package is one PUT, made when the file is complete: a
// segment's object exists before the playlist object that names it is
// written. A package that exists is continued (its state object is read),
// never overwritten.
func (o *Output) CreatePackage(broadcast string, start time.Time) (record.Package, error) {
	p := o.loc.Key
	if o.tmpl.IsTemplate() {
		var err error
		if p, err = o.tmpl.Expand(broadcast, 0, start); err != nil {
			return nil, err
		}
	}
	p = strings.TrimPrefix(path.Clean("/"+strings.ReplaceAll(p, "\\", "/")), "/")
	prefix, playlist := p, "index.m3u8"
	switch strings.ToLower(path.Ext(p)) {
	case ".m3u8":
		prefix, playlist = path.Dir(p), path.Base(p)
	case ".mpd":
		prefix, playlist = path.Dir(p), strings.TrimSuffix(path.Base(p), path.Ext(p))+".m3u8"
	}
	if prefix == "." {
		prefix = ""
	}
	return &objPackage{o: o, prefix: prefix, playlist: playlist}, nil
}

// objPackage is a package of objects under a prefix.
type objPackage struct {
	o        *Output
	prefix   string
	playlist string
}

func (p *objPackage) key(name string) (string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return "", fmt.Errorf("objstore: package file name %q is not a plain name", name)
	}
	return path.Join(p.prefix, name), nil
}

func (p *objPackage) Playlist() string { return p.playlist }

func (p *objPackage) Name() string {
	k, _ := p.key(p.playlist)
	return p.o.loc.object(k)
}

// WriteFile puts the object, tried again after transient failures for at
// most the Output's FinishTimeout.
func (p *objPackage) WriteFile(name string, data []byte) error {
	key, err := p.key(name)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.o.opts.FinishTimeout)
	defer cancel()
	b, err := newBody(bytes.NewReader(data))
	if err != nil {
		return err
	}
	if err := p.o.st.put(ctx, key, contentType(name), b); err != nil {
		return &record.WriteError{Path: p.o.loc.object(key), Err: err}
	}
	p.o.st.objects.Add(1)
	p.o.written.Add(int64(len(data)))
	return nil
}

// ReadFile gets the object; an error wrapping fs.ErrNotExist when there is
// none.
func (p *objPackage) ReadFile(name string) ([]byte, error) {
	key, err := p.key(name)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var data []byte
	missing := false
	err = p.o.st.do(ctx, "read", key, func(ctx context.Context) error {
		out, err := p.o.st.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &p.o.loc.Bucket, Key: &key})
		if err != nil {
			var se *StoreError
			if e := storeError("", "", err); errors.As(e, &se) && se.Status == 404 {
				missing = true
				return nil
			}
			return err
		}
		defer out.Body.Close()
		data, err = io.ReadAll(out.Body)
		return err
	})
	if missing {
		return nil, fmt.Errorf("%s: %w", p.o.loc.object(key), fs.ErrNotExist)
	}
	return data, err
}

func (p *objPackage) Close() error { return nil }
