package hls_test

import (
	"encoding/json"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux/hls"
)

// memStore is a Store in memory.
type memStore map[string][]byte

func (m memStore) WriteFile(name string, data []byte) error {
	m[name] = append([]byte(nil), data...)
	return nil
}

func (m memStore) ReadFile(name string) ([]byte, error) {
	b, ok := m[name]
	if !ok {
		return nil, errNotExist
	}
	return b, nil
}

// FuzzContinuingAPackageFromItsState gives the Writer a package whose
// state file holds arbitrary bytes: it continues the package or refuses
// it with an error, and never panics.
func FuzzContinuingAPackageFromItsState(f *testing.F) {
	v, a := looped("h264", 0, 1), looped("aac", 1, 1)
	st := memStore{}
	w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: 1e6 * 1000})
	mediatest.Feed(f, w, v, a)
	if err := w.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(st["index.state.json"])
	f.Add([]byte(`{"version":1,"renditions":[{"id":"v0","name":"h264","kind":"video","inits":[],"segments":[{"n":1,"uri":"x","init":3,"start":0,"dur":1}]}]}`))
	f.Add([]byte(`{"version":1,"renditions":[{"id":"../x","kind":"video"}]}`))
	f.Add([]byte(`{"version":1,"renditions":[null]}`))
	f.Add([]byte(`{"version":1,"renditions":[{"id":"s0","name":"subs","kind":"text","codecs":"wvtt","inits":[],"segments":[{"n":1,"uri":"s0-00001.vtt","init":0,"start":0,"dur":4000000}]}],"chapters":[{"id":"chapter-1","start":0,"date":"2026-01-01T00:00:00Z","name":"x"}]}`))
	frames := mediatest.Interleave(v, a)[:40]
	f.Fuzz(func(t *testing.T, state []byte) {
		st := memStore{"index.state.json": state}
		w := hls.NewWriter(hls.Options{Store: st})
		for _, tr := range mediatest.Tracks(v, a) {
			if err := w.AddTrack(tr); err != nil {
				return
			}
		}
		for _, fr := range frames {
			if err := w.WriteFrame(fr); err != nil {
				return
			}
		}
		if err := w.Close(); err != nil {
			return
		}
		var s struct{ Renditions []json.RawMessage }
		if err := json.Unmarshal(st["index.state.json"], &s); err != nil {
			t.Fatalf("the state written is not JSON: %v", err)
		}
	})
}
