package objstore

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/storetest"
)

// TestGCSComposesMoreThan32PartsInRounds: compose takes 32 sources a
// call, so 70 parts are composed into 3 intermediates first; the object
// is the parts in order, and no part object or intermediate is left.
func TestGCSComposesMoreThan32PartsInRounds(t *testing.T) {
	t.Parallel()
	srv := storetest.GCS(t)
	srv.Bucket(t, "compose")
	ctx := context.Background()
	b, err := newGCS(ctx, Location{Scheme: "gs", Bucket: "compose", Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := b.create(ctx, "a/x.ts", "video/mp2t")
	var want bytes.Buffer
	var parts []partRec
	for n := int32(1); n <= 70; n++ {
		p := fmt.Appendf(nil, "part %02d;", n)
		want.Write(p)
		body, _ := newBody(bytes.NewReader(p))
		etag, err := b.uploadPart(ctx, "a/x.ts", id, n, body)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, partRec{N: n, Size: int64(len(p)), ETag: etag})
	}
	ups, err := b.uploads(ctx, "a/")
	if err != nil || len(ups) != 1 || ups[0].ID != id || ups[0].Key != "a/x.ts" || len(ups[0].Parts) != 70 {
		t.Fatalf("uploads before the finish: %+v, %v", ups, err)
	}
	if err := b.complete(ctx, "a/x.ts", id, "video/mp2t", parts); err != nil {
		t.Fatal(err)
	}
	if got := srv.Object(t, "compose", "a/x.ts"); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("object %q, want %q", got, want.Bytes())
	}
	left, err := b.listRaw(ctx, "")
	if err != nil || len(left) != 1 || strings.HasPrefix(left[0].Key, partsPrefix) {
		t.Errorf("objects after the finish: %+v, %v", left, err)
	}
}
