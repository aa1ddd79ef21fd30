package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"

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
// never overwritten; a prefix that holds another package, or that this
// process records a package into now, is refused with a
// *record.PackageDirError (record.ClaimPackage, over a listing of the
// prefix).
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
	where := o.loc.bucketURL()
	if prefix != "" {
		where = o.loc.object(prefix)
	}
	release, err := record.ClaimPackage(where, playlist, func() ([]string, error) { return o.packageNames(prefix) })
	if err != nil {
		return nil, err
	}
	return &objPackage{o: o, prefix: prefix, playlist: playlist, release: release}, nil
}

// packageNames lists the names of the objects directly under prefix (a package's
// files; another package's state is NAME.state.json there). The listing
// is the store's (recursive: a prefix that holds other packages' prefixes
// lists their objects too), tried again after transient failures for a
// minute, as ReadFile.
func (o *Output) packageNames(prefix string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := prefix
	if dir != "" {
		dir += "/"
	}
	objs, err := o.st.list(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("listing the package's prefix %s: %w", o.loc.object(dir), err)
	}
	var names []string
	for _, ob := range objs {
		if n := strings.TrimPrefix(ob.Key, dir); n != "" && !strings.Contains(n, "/") {
			names = append(names, n)
		}
	}
	return names, nil
}

// PackageTemplate is the template of the keys the packages are named by.
func (o *Output) PackageTemplate() record.Template { return o.tmpl }

// objPackage is a package of objects under a prefix.
type objPackage struct {
	o        *Output
	prefix   string
	playlist string
	release  func() // the prefix's claim (record.ClaimPackage)
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
	data, err := p.o.st.get(ctx, key)
	if errors.Is(err, errNotFound) {
		return nil, fmt.Errorf("%w: %w", err, fs.ErrNotExist)
	}
	return data, err
}

func (p *objPackage) Close() error {
	p.release()
	return nil
}
