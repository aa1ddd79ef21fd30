package objstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	raw "google.golang.org/api/storage/v1"
)

// gcsBackend is a Google Cloud Storage bucket. GCS has no multipart
// upload of S3's kind: a part is an object of its own, under
// partsPrefix/KEY/ID/NNNNN, and the finish composes the parts into the
// object server-side (compose takes up to 32 sources a call: more parts
// are composed 32 at a time into intermediate objects, and those again),
// then deletes them. Nothing is uploaded twice; an unfinished upload is
// its part objects, which RecoverStore lists by prefix.
//
// The client is Google's generated JSON API client
// (google.golang.org/api/storage/v1), the one cloud.google.com/go/storage
// is built on: it takes the same credentials and endpoints, and the calls
// used here (insert, compose, list, get, delete) are one request each;
// the higher-level package adds gRPC, OpenTelemetry and retries of its
// own: 18 MB more of the binary (see the package doc).
type gcsBackend struct {
	s      *raw.Service
	bucket string
}

// partsPrefix is the prefix of the part objects of unfinished uploads
// (GCS), and of the header of an unfinished upload (part 0: S3 keeps it
// as an object of its own). Listings of the bucket leave them out.
const partsPrefix = ".moq-export-parts/"

// gcsCompose is how many sources one compose request takes.
const gcsCompose = 32

// newGCS makes the client the way Google's SDK does by default:
// Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the
// file `gcloud auth application-default login` writes, the metadata
// server of GCE, GKE and Cloud Run); STORAGE_EMULATOR_HOST names an
// emulator (no credentials), as the SDK reads it. The URL's ?endpoint=
// overrides the endpoint; a plain-http endpoint is an emulator, without
// credentials.
func newGCS(ctx context.Context, l Location) (*gcsBackend, error) {
	endpoint := l.Endpoint
	if endpoint == "" {
		if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
			if !strings.Contains(host, "://") {
				host = "http://" + host
			}
			endpoint = host
		}
	}
	opts := []option.ClientOption{option.WithScopes(raw.DevstorageReadWriteScope)}
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil {
			return nil, fmt.Errorf("objstore: GCS endpoint %q: %w", endpoint, err)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/storage/v1/"
		}
		opts = append(opts, option.WithEndpoint(u.String()))
		if u.Scheme == "http" {
			opts = append(opts, option.WithoutAuthentication())
		}
	}
	s, err := raw.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: Google Cloud Storage client: %w", err)
	}
	return &gcsBackend{s: s, bucket: l.Bucket}, nil
}

func (b *gcsBackend) classify(err error) (status int, code string) {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		status = ge.Code
		if len(ge.Errors) > 0 {
			code = ge.Errors[0].Reason
		}
	}
	// The token endpoint refused the credentials (a deleted or revoked
	// key: 400 invalid_grant; an unknown client: 401): the request never
	// reached the store, and the credentials are what to check.
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Response != nil && ae.Response.StatusCode >= 400 && ae.Response.StatusCode < 500 {
		status, code = http.StatusUnauthorized, "AccessDenied"
	}
	return status, code
}

func (b *gcsBackend) checkBucket(ctx context.Context) error {
	_, err := b.s.Buckets.Get(b.bucket).Context(ctx).Do()
	return err
}

func (b *gcsBackend) exists(ctx context.Context, key string) (bool, error) {
	_, err := b.s.Objects.Get(b.bucket, key).Context(ctx).Do()
	if st, _ := b.classify(err); st == 404 {
		return false, nil
	}
	return err == nil, err
}

// create makes the id only: the parts are objects of their own.
func (b *gcsBackend) create(context.Context, string, string) (string, error) {
	var id [8]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:]), nil
}

// partName names part n of upload id of key.
func partName(key, id string, n int32) string {
	return fmt.Sprintf("%s%s/%s/%05d", partsPrefix, key, id, n)
}

// write uploads one object in one request, the body streamed.
func (b *gcsBackend) write(ctx context.Context, name, contentType string, r io.Reader, meta map[string]string) (*raw.Object, error) {
	obj := &raw.Object{Name: name, ContentType: contentType, Metadata: meta}
	mo := []googleapi.MediaOption{googleapi.ChunkSize(0)}
	if contentType != "" {
		mo = append(mo, googleapi.ContentType(contentType))
	}
	return b.s.Objects.Insert(b.bucket, obj).Media(r, mo...).Context(ctx).Do()
}

func (b *gcsBackend) uploadPart(ctx context.Context, key, id string, n int32, body *body) (string, error) {
	o, err := b.write(ctx, partName(key, id, n), "application/octet-stream", body, map[string]string{"moq-export": "part"})
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(o.Generation, 10), nil
}

// complete composes the parts into key, 32 at a time, then deletes the
// part objects and the intermediates.
func (b *gcsBackend) complete(ctx context.Context, key, id, contentType string, parts []partRec) error {
	srcs := make([]string, len(parts))
	for i, p := range parts {
		srcs[i] = partName(key, id, p.N)
	}
	for level := 0; len(srcs) > gcsCompose; level++ {
		var next []string
		for i := 0; i < len(srcs); i += gcsCompose {
			name := fmt.Sprintf("%s%s/%s/c%d-%05d", partsPrefix, key, id, level, i/gcsCompose)
			if err := b.compose(ctx, name, "application/octet-stream", srcs[i:min(i+gcsCompose, len(srcs))]); err != nil {
				return err
			}
			next = append(next, name)
		}
		srcs = next
	}
	if err := b.compose(ctx, key, contentType, srcs); err != nil {
		return err
	}
	b.drop(ctx, key, id)
	return nil
}

func (b *gcsBackend) compose(ctx context.Context, dst, contentType string, srcs []string) error {
	req := &raw.ComposeRequest{Destination: &raw.Object{ContentType: contentType}}
	for _, s := range srcs {
		req.SourceObjects = append(req.SourceObjects, &raw.ComposeRequestSourceObjects{Name: s})
	}
	_, err := b.s.Objects.Compose(b.bucket, dst, req).Context(ctx).Do()
	return err
}

// drop deletes what is left of upload id of key (its parts and
// intermediates), best effort: what stays costs only its storage, and
// RecoverStore drops it once it sees the object finished after it.
func (b *gcsBackend) drop(ctx context.Context, key, id string) {
	objs, err := b.listRaw(ctx, partsPrefix+key+"/"+id+"/")
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for name := range work {
				b.s.Objects.Delete(b.bucket, name).Context(ctx).Do()
			}
		})
	}
	for _, o := range objs {
		work <- o.Key
	}
	close(work)
	wg.Wait()
}

func (b *gcsBackend) abort(ctx context.Context, key, id string) error {
	b.drop(ctx, key, id)
	return nil
}

func (b *gcsBackend) put(ctx context.Context, key, contentType string, body *body) error {
	_, err := b.write(ctx, key, contentType, body, nil)
	return err
}

func (b *gcsBackend) putBytes(ctx context.Context, key string, data []byte) error {
	_, err := b.write(ctx, key, "", strings.NewReader(string(data)), nil)
	return err
}

func (b *gcsBackend) get(ctx context.Context, key string) ([]byte, error) {
	r, err := b.s.Objects.Get(b.bucket, key).Context(ctx).Download()
	if st, _ := b.classify(err); st == 404 {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *gcsBackend) listRaw(ctx context.Context, prefix string) ([]objectInfo, error) {
	var objs []objectInfo
	err := b.s.Objects.List(b.bucket).Prefix(prefix).Pages(ctx, func(page *raw.Objects) error {
		for _, o := range page.Items {
			t, _ := time.Parse(time.RFC3339, o.Updated)
			objs = append(objs, objectInfo{Key: o.Name, Size: int64(o.Size), Modified: t})
		}
		return nil
	})
	return objs, err
}

func (b *gcsBackend) list(ctx context.Context, prefix string) ([]objectInfo, error) {
	objs, err := b.listRaw(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := objs[:0]
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, partsPrefix) {
			out = append(out, o)
		}
	}
	return out, nil
}

func (b *gcsBackend) remove(ctx context.Context, key string) error {
	err := b.s.Objects.Delete(b.bucket, key).Context(ctx).Do()
	if st, _ := b.classify(err); st == 404 {
		return nil
	}
	return err
}

// uploads lists the part objects under the prefix, grouped by upload.
func (b *gcsBackend) uploads(ctx context.Context, prefix string) ([]upload, error) {
	objs, err := b.listRaw(ctx, partsPrefix+prefix)
	if err != nil {
		return nil, err
	}
	var ups []upload
	index := map[string]int{}
	for _, o := range objs {
		rest := strings.TrimPrefix(o.Key, partsPrefix)
		dir, num := path.Split(rest)
		key, id := path.Split(strings.TrimSuffix(dir, "/"))
		key = strings.TrimSuffix(key, "/")
		n, err := strconv.ParseInt(num, 10, 32)
		if err != nil || key == "" || id == "" {
			continue // an intermediate of a compose, or not ours
		}
		i, ok := index[key+"\x00"+id]
		if !ok {
			i = len(ups)
			index[key+"\x00"+id] = i
			ups = append(ups, upload{Key: key, ID: id, Started: o.Modified})
		}
		u := &ups[i]
		u.Parts = append(u.Parts, partRec{N: int32(n), Size: o.Size})
		if o.Modified.After(u.LastPart) {
			u.LastPart = o.Modified
		}
		if o.Modified.Before(u.Started) {
			u.Started = o.Modified
		}
	}
	return ups, nil
}
