package hls_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/Eyevinn/dash-mpd/mpd"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// mpdCheckStore holds every MPD the Writer writes to what dash-mpd's own
// writer makes of the same document.
type mpdCheckStore struct {
	*dirStore
	t       *testing.T
	w       *hls.Writer
	checked int
}

func (s *mpdCheckStore) WriteFile(name string, data []byte) error {
	if strings.HasSuffix(name, ".mpd") {
		s.t.Helper()
		ref, err := s.w.ReferenceMPD(strings.Contains(string(data), `type="static"`))
		must(s.t, err)
		mine, err := mpd.ReadFromString(string(data))
		if err != nil {
			s.t.Fatalf("dash-mpd cannot read the MPD written (%v):\n%s", err, data)
		}
		want, err := mpd.ReadFromString(ref)
		must(s.t, err)
		if !reflect.DeepEqual(mine, want) {
			s.t.Fatalf("the MPD written says other than dash-mpd's writer:\n%s\nwant:\n%s", data, ref)
		}
		s.checked++
	}
	return s.dirStore.WriteFile(name, data)
}

func TestTheMPDWriterSaysWhatDashMPDSays(t *testing.T) {
	t.Parallel()
	odd := looped("aac", 3, 2)
	odd.Track.Name, odd.Track.Language, odd.Track.Label = `a"<&'>`, "de", "Ünï <\"code\"> & 'x'\x01\t\xff"
	v, a := looped("h264", 0, 1), looped("aac", 1, 1)
	gap := int64(30_000_000)
	outage := mediatest.Interleave(v, a)
	outage = append(outage, mediatest.AfterDiscontinuity(mediatest.Interleave(v.Shift(gap), a.Shift(gap)))...)
	for _, tc := range []struct {
		name   string
		runs   int
		ins    []mediatest.Input
		frames []mux.Frame
	}{
		{"two video, two audio and subtitles", 1, append(withText(), renamed(looped("h264", 4, 3), "small"), odd), nil},
		{"audio alone", 1, []mediatest.Input{looped("aac", 1, 3)}, nil},
		{"a restart", 2, []mediatest.Input{looped("h264", 0, 2), looped("aac", 1, 2)}, nil},
		{"an outage", 1, []mediatest.Input{v, a}, outage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := &mpdCheckStore{dirStore: newStore(t), t: t}
			now := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
			for range tc.runs {
				st.w = hls.NewWriter(hls.Options{Store: st, Now: func() time.Time { return now }})
				if tc.frames != nil {
					mediatest.Write(t, st.w, mediatest.Tracks(tc.ins...), tc.frames)
				} else {
					mediatest.Feed(t, st.w, tc.ins...)
				}
				must(t, st.w.Close())
			}
			if st.checked < 3 {
				t.Fatalf("%d MPDs checked", st.checked)
			}
		})
	}
}
