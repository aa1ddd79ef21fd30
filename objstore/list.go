package objstore

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Object is an object under an Output's key prefix.
type Object struct {
	URL      string // s3://BUCKET/KEY, as FileEvents name it
	Key      string
	Size     int64
	Modified time.Time
}

// prefix is the literal head of the key template: every key the Output
// writes starts with it.
func (o *Output) prefix() string {
	p := o.loc.Key
	if i := strings.IndexByte(p, '{'); i >= 0 {
		p = p[:i]
	}
	return p
}

// List lists the objects under the key template's literal prefix (for
// rec/{broadcast}-{time}.mp4: every object under rec/), which holds what
// the Output writes, finished objects only (unfinished uploads are not
// objects yet). Requests are tried again after transient failures until
// ctx ends.
func (o *Output) List(ctx context.Context) ([]Object, error) {
	objs, err := o.st.list(ctx, o.prefix())
	if err != nil {
		return nil, err
	}
	out := make([]Object, len(objs))
	for i, ob := range objs {
		out[i] = Object{URL: o.loc.object(ob.Key), Key: ob.Key, Size: ob.Size, Modified: ob.Modified}
	}
	return out, nil
}

// Delete deletes the object url names (one of List's); an object of
// another bucket or outside the prefix is refused. A missing object is
// not an error.
func (o *Output) Delete(ctx context.Context, url string) error {
	key, ok := strings.CutPrefix(url, o.loc.bucketURL()+"/")
	if !ok || !strings.HasPrefix(key, o.prefix()) || key == "" {
		return fmt.Errorf("objstore: %s is not under %s", url, o.loc.object(o.prefix()))
	}
	return o.st.remove(ctx, key)
}
