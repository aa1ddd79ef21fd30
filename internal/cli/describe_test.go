package cli

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/record"
)

// TestTypedErrorsOfTheLibraryAreSaidInTheCommandsWords: every typed error
// of package record, wrapped as a recording wraps it, comes out with the
// flag and the advice of the command; the rest of the chain is kept.
func TestTypedErrorsOfTheLibraryAreSaidInTheCommandsWords(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{&record.WaitError{Broadcast: "b", Origin: "under moql://x", Wait: 3 * time.Second},
			[]string{`broadcast "b" was not announced under moql://x within --wait 3s`, "--list shows what is announced"}},
		{&record.WaitError{Origin: "under moql://x", Wait: time.Second}, []string{"no broadcast was announced under moql://x within --wait 1s"}},
		{&record.EmptyWindowError{Origin: "under moql://x", Window: time.Second},
			[]string{"no broadcast was announced under moql://x within --duration 1s (counted from the start, connecting included), so nothing was recorded"}},
		{&record.CatalogError{Broadcast: "b", Err: errors.New("boom")}, []string{`broadcast "b": reading its catalog: boom; check the name with --list`}},
		{&record.SelectionError{Broadcast: "b", Kind: catalog.KindVideo, Name: "w", Video: []string{"v"}}, []string{`has no video rendition "w" (it has v); see --list -b b`}},
		{&record.RenditionError{Broadcast: "b", Kind: catalog.KindVideo, Name: "vp8", Format: record.TS, Others: []record.Format{record.MKV, record.WebM}, Err: errors.New(`ts cannot carry codec "vp8"`)},
			[]string{`--video vp8: ts cannot carry codec "vp8"; record with -f mkv or -f webm`}},
		{&record.FormatError{Broadcast: "b", Format: record.TS, Renditions: []string{"v (vp8)"}, Others: []record.Format{record.MKV}},
			[]string{`ts cannot carry any selected rendition of "b" (v (vp8)): record with -f mkv`}},
		{&record.FormatError{Broadcast: "b", Format: record.TS, Renditions: []string{"v (x)"}}, []string{"pick other renditions with --video/--audio (see --list -b b)"}},
		{&record.LimitError{Limit: record.LimitRecordings, Have: 1, Max: 1}, []string{"--max-broadcasts is 1"}},
		{&record.LimitError{Limit: record.LimitFileBytes, Have: 100 << 10, Max: 96 << 10, Path: "x.ts"}, []string{"x.ts reached --max-bytes 96 KiB"}},
		{&record.LimitError{Limit: record.LimitFreeBytes, Have: 1 << 20, Max: 1 << 30, Path: "rec"}, []string{"1 MiB free on the disk of rec, below --min-free 1 GiB"}},
		{&record.ExistsError{Path: "x.mkv"}, []string{"x.mkv already exists: pass -y to overwrite it, or give -o another name"}},
		{&record.OutOfFilesError{Path: "x.ts", Limit: 64, HardLimit: 64, Err: syscall.EMFILE}, []string{"may open 64", "ulimit -n", "fewer broadcasts"}},
	} {
		wrapped := fmt.Errorf("recording %q: %w", "b", tc.err)
		got := describe(wrapped)
		if !strings.HasPrefix(got, `recording "b": `) {
			t.Errorf("%q lost the chain around the error", got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%q does not say %q", got, w)
			}
		}
		if strings.Contains(tc.err.Error(), "--") || strings.Contains(tc.err.Error(), " -") {
			t.Errorf("the library's own %q names a flag", tc.err)
		}
	}
}
