package archive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"

	"github.com/moq-export/moq-export/archive"
)

// TestObjectsReadFromADirAreEachTheirOwn: Get reads objects into shared
// chunks of memory; each object read must still be whole, its own (an
// append to one never writes over another) and stay intact while others
// are read, concurrently, small and large.
func TestObjectsReadFromADirAreEachTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := archive.Dir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for i, size := range []int{1, 10 << 10, 60 << 10, 200 << 10, 300 << 10} {
		for j := range 3 {
			b := bytes.Repeat([]byte{byte(i*3 + j + 1)}, size)
			k := fmt.Sprintf("t/segments/%d.%d", i, j)
			if err := st.Put(ctx, k, b); err != nil {
				t.Fatal(err)
			}
			want[k] = b
		}
	}
	var mu sync.Mutex
	got := map[string][][]byte{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 3 {
				for k := range want {
					b, err := st.Get(ctx, k)
					if err != nil {
						t.Error(err)
						return
					}
					// An append past the object must not reach memory
					// another object was read into.
					_ = append(b, 0xee)
					mu.Lock()
					got[k] = append(got[k], b)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k, w := range want {
		if len(got[k]) != 12 {
			t.Fatalf("%s read %d times, want 12", k, len(got[k]))
		}
		for _, b := range got[k] {
			if !bytes.Equal(b, w) {
				t.Fatalf("%s: %d bytes read back differ from the %d stored", k, len(b), len(w))
			}
		}
	}
	if _, err := st.Get(ctx, "t/segments/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("reading a missing object: %v, want an error wrapping fs.ErrNotExist", err)
	}
}
