package muxbase

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/mux"
)

// writerOf writes at most n bytes per call and fails with err after them.
type writerOf struct {
	n   int
	err error
	got []byte
}

func (w *writerOf) Write(p []byte) (int, error) {
	k := min(len(p), w.n)
	w.got = append(w.got, p[:k]...)
	w.n -= k
	if k < len(p) {
		return k, w.err
	}
	return k, nil
}

func TestOutputWritesWholeAndTheFirstErrorSticks(t *testing.T) {
	disk := errors.New("disk full")
	for _, tc := range []struct {
		name    string
		room    int
		err     error
		wantErr error // of the second write
		wantPos int64
	}{
		{"fits", 10, nil, nil, 8},
		{"error part way", 6, disk, disk, 6},
		{"short write without an error", 6, nil, io.ErrShortWrite, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &writerOf{n: tc.room, err: tc.err}
			o := NewOutput(w, "fmt")
			if err := o.Write([]byte("abcd")); err != nil {
				t.Fatalf("first write: %v", err)
			}
			err := o.Write([]byte("efgh"))
			if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
				t.Fatalf("second write: %v, want %v", err, tc.wantErr)
			}
			if o.Pos != tc.wantPos || int64(len(w.got)) != tc.wantPos {
				t.Errorf("Pos %d, %d bytes written, want %d", o.Pos, len(w.got), tc.wantPos)
			}
			if tc.wantErr == nil {
				return
			}
			if err.Error() != "fmt: write: "+tc.wantErr.Error() {
				t.Errorf("error %q", err)
			}
			if u := o.Usable(); u != err {
				t.Errorf("Usable after the failure: %v, want the write error", u)
			}
			if f := o.Fail(errors.New("later")); f.Error() != "later" || o.Err != err {
				t.Errorf("Fail after the failure returned %v and kept %v, want the first error kept", f, o.Err)
			}
			o.Closed = true
			if u := o.Usable(); !errors.Is(u, mux.ErrClosed) {
				t.Errorf("Usable after Close: %v", u)
			}
		})
	}
}

func TestUnknownTrackNamesTheFormatAndWraps(t *testing.T) {
	o := NewOutput(io.Discard, "mkv")
	err := o.UnknownTrack("frame for", 7)
	if !errors.Is(err, mux.ErrUnknownTrack) || err.Error() != "mkv: frame for track 7: unknown track" {
		t.Errorf("%v", err)
	}
}

func TestHeldBoundsSpanAndBytesAndKeepsOrder(t *testing.T) {
	var h Held[string]
	if h.Len() != 0 || h.Over(time.Second) {
		t.Fatal("empty Held is not empty or says over")
	}
	h.AddMark("mark")
	if h.Over(time.Microsecond) {
		t.Error("a mark alone makes a span")
	}
	h.Add("a", 1_000_000, 10)
	h.Add("b", 1_400_000, 10)
	h.Add("c", 1_200_000, 10) // decode order: out of timestamp order
	if h.Over(500*time.Millisecond) || !h.Over(400*time.Millisecond) {
		t.Errorf("span of 400 ms: Over(500ms) %v, Over(400ms) %v", h.Over(500*time.Millisecond), h.Over(400*time.Millisecond))
	}
	h.DeleteFunc(func(s string) bool { return s == "b" })
	if h.Over(300 * time.Millisecond) {
		t.Error("the span did not shrink when its last frame was deleted")
	}
	if got := h.Take(); !slices.Equal(got, []string{"mark", "a", "c"}) {
		t.Errorf("Take %v", got)
	}
	if h.Len() != 0 || h.Over(0) {
		t.Errorf("after Take: %d entries, Over(0) %v", h.Len(), h.Over(0))
	}
	h.Add("big", 0, MaxHeldBytes)
	if !h.Over(time.Hour) {
		t.Error("MaxHeldBytes of frames is not over")
	}
}
