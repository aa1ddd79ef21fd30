package objstore_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/s3test"
	"github.com/moq-export/moq-export/objstore"
)

// TestListAndDeleteKeepToTheKeysPrefix: List gives the objects under the
// key template's literal prefix with their sizes, Delete removes one of them and refuses a URL of
// another bucket or outside the prefix; on S3, GCS and Azure.
func TestListAndDeleteKeepToTheKeysPrefix(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"s3", "gs", "az"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			var base string // scheme://list
			query := ""
			switch store {
			case "s3":
				s := s3test.Start(t)
				s.Bucket(t, "list")
				base, query = "s3://list", "?endpoint="+s.Endpoint
			default:
				c := startCloud(t, map[string]string{"gs": "gcs", "az": "azure"}[store])
				c.srv.Bucket(t, "list")
				base, query = store+"://list", "?endpoint="+c.srv.Endpoint
			}
			ctx := context.Background()
			for _, k := range []string{"rec/a.mkv", "rec/sub/b.mp4", "other/c.mkv"} {
				dir, name, _ := strings.Cut(k, "/")
				put, err := objstore.ArchiveStore(ctx, base+"/"+dir+query, quiet)
				if err != nil {
					t.Fatal(err)
				}
				if err := put.Put(ctx, name, []byte(k)); err != nil {
					t.Fatal(err)
				}
			}
			out := openCloud(t, base+"/rec/{broadcast}.mkv"+query, objstore.Options{})
			list := func() []string {
				objs, err := out.List(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, o := range objs {
					if o.Size != int64(len(o.Key)) || o.URL != base+"/"+o.Key {
						t.Errorf("object %+v", o)
					}
					got = append(got, o.Key)
				}
				slices.Sort(got)
				return got
			}
			if got := list(); !slices.Equal(got, []string{"rec/a.mkv", "rec/sub/b.mp4"}) {
				t.Errorf("List: %v", got)
			}
			for _, bad := range []string{base + "/other/c.mkv", "s3://elsewhere/rec/a.mkv", base + "/rec"} {
				if err := out.Delete(ctx, bad); err == nil {
					t.Errorf("Delete(%s) accepted", bad)
				}
			}
			if err := out.Delete(ctx, base+"/rec/a.mkv"); err != nil {
				t.Fatal(err)
			}
			if got := list(); !slices.Equal(got, []string{"rec/sub/b.mp4"}) {
				t.Errorf("List after Delete: %v", got)
			}
		})
	}
}
