package hls_test

import (
	"bytes"
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
// writer makes of the same document, every media playlist to what
// gohlslib's writer makes of it, and every state to what encoding/json
// makes of it, byte for byte. At each MPD written while recording (the
// multivariant playlist's turn comes next) it checks that when the Writer
// would not build the multivariant playlist, building it would not have
// written it.
type mpdCheckStore struct {
	*dirStore
	t         *testing.T
	w         *hls.Writer
	checked   int
	playlists int
	states    int
	mvSkips   int
}

func (s *mpdCheckStore) WriteFile(name string, data []byte) error {
	if strings.HasSuffix(name, ".mpd") {
		s.t.Helper()
		if !strings.Contains(string(data), `type="static"`) {
			skipped, err := s.w.MultivariantSkipped()
			must(s.t, err)
			if skipped {
				s.mvSkips++
			}
		}
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
	if name == "index.state.json" {
		s.t.Helper()
		want, err := s.w.ReferenceState()
		must(s.t, err)
		if string(data) != string(want) {
			s.t.Fatalf("the state written:\n%s\nwant, as encoding/json writes it:\n%s", data, want)
		}
		s.states++
	}
	if id, ok := strings.CutSuffix(name, ".m3u8"); ok && name != "index.m3u8" {
		s.t.Helper()
		want, err := s.w.ReferenceMediaPlaylist(id, strings.Contains(string(data), "#EXT-X-ENDLIST"))
		must(s.t, err)
		if string(data) != string(want) {
			s.t.Fatalf("%s written:\n%s\nwant, as gohlslib writes it:\n%s", name, data, want)
		}
		s.playlists++
	}
	return s.dirStore.WriteFile(name, data)
}

func TestTheManifestWritersSayWhatTheLibrariesSay(t *testing.T) {
	t.Parallel()
	odd := looped("aac", 3, 2)
	odd.Track.Name, odd.Track.Language, odd.Track.Label = `a"<&'>`, "de", "Ünï <\"code\"> & 'x'\x01\t\xff"
	v, a := looped("h264", 0, 1), looped("aac", 1, 1)
	gap := int64(30_000_000)
	outage := mediatest.Interleave(v, a)
	outage = append(outage, mediatest.AfterDiscontinuity(mediatest.Interleave(v.Shift(gap), a.Shift(gap)))...)
	// Audio whose frames grow fivefold after 8 s (the manifests are not
	// decoded): its rates move by more than the multivariant playlist's
	// 10% over several boundaries.
	growing := looped("aac", 1, 6)
	grown := mediatest.Interleave(growing)
	for i := range grown {
		if grown[i].Timestamp >= 8_000_000 {
			grown[i].Payload = bytes.Repeat(grown[i].Payload, 5)
		}
	}
	// Audio that begins after the first boundary: its init segment and
	// description come after the first state.
	lateV, lateA := looped("h264", 0, 4), looped("aac", 1, 1)
	late := mediatest.Interleave(lateV, lateA.Shift(9_000_000))
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
		{"chapters", 1, []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}, nil},
		{"a minute", 1, []mediatest.Input{looped("h264", 0, 15), looped("aac", 1, 15)}, nil},
		{"audio that begins late", 1, []mediatest.Input{lateV, lateA}, late},
		{"audio whose rate grows", 1, []mediatest.Input{growing}, grown},
		{"a restart with a new picture size", 2, nil, nil},
	} {
		for _, layout := range layouts {
			t.Run(layout.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				st := &mpdCheckStore{dirStore: newStore(t), t: t}
				now := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
				for run := range tc.runs {
					st.w = hls.NewWriter(hls.Options{Store: st, Now: func() time.Time { return now }, SegmentFiles: layout.files})
					if tc.name == "chapters" {
						must(t, st.w.Chapter(0, "opening"))
						must(t, st.w.Chapter(5_000_000, `a "second" one`))
					}
					switch {
					case tc.ins == nil:
						// The same rendition, another codec configuration: a
						// new init segment, an EXT-X-MAP of its own.
						mediatest.Feed(t, st.w, renamed(looped([]string{"h264", "h264-360p"}[run], 0, 2), "video"))
					case tc.frames != nil:
						mediatest.Write(t, st.w, mediatest.Tracks(tc.ins...), tc.frames)
					default:
						mediatest.Feed(t, st.w, tc.ins...)
					}
					must(t, st.w.Close())
				}
				if st.checked < 2 || st.playlists < 3 || st.states < 2 {
					t.Fatalf("%d MPDs, %d media playlists and %d states checked", st.checked, st.playlists, st.states)
				}
				t.Logf("%d MPDs checked; the multivariant playlist not built at %d boundaries", st.checked, st.mvSkips)
			})
		}
	}
}

// TestTheInitSegmentSaysWhatTheStateRecords: the codec string, timescale
// and picture size the Writer takes from the CMAF writer's sample entry
// are what reading the init segment back says, for every codec.
func TestTheInitSegmentSaysWhatTheStateRecords(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{{"h264", "aac"}, {"h265", "opus"}, {"av1", "flac"}, {"vp9", "ac3"}, {"h264-360p", "aac"}} {
		t.Run(pair[0]+"+"+pair[1], func(t *testing.T) {
			t.Parallel()
			st, _ := record(t, hls.Options{}, looped(pair[0], 0, 1), looped(pair[1], 1, 1))
			b, err := st.ReadFile("index.state.json")
			must(t, err)
			var s struct {
				Renditions []struct {
					ID, Codecs    string
					Timescale     uint32
					Width, Height int
					Inits         []string
				}
			}
			must(t, jsonUnmarshal(b, &s))
			if len(s.Renditions) != 2 {
				t.Fatalf("%d renditions", len(s.Renditions))
			}
			for _, r := range s.Renditions {
				init, err := st.ReadFile(r.Inits[0])
				must(t, err)
				codecs, ts, w, h, err := hls.InitReadBack(init)
				must(t, err)
				if codecs != r.Codecs || ts != r.Timescale || (w != 0 && (w != r.Width || h != r.Height)) {
					t.Errorf("%s: the state says %s %d %dx%d, the init segment %s %d %dx%d", r.ID, r.Codecs, r.Timescale, r.Width, r.Height, codecs, ts, w, h)
				}
			}
		})
	}
}

// TestASegmentOfTheStateIsWrittenAsEncodingJSONWritesIt: the state's
// segments are rendered field by field; each is what encoding/json makes
// of it, for the URIs and dates it escapes or writes otherwise too.
func TestASegmentOfTheStateIsWrittenAsEncodingJSONWritesIt(t *testing.T) {
	t.Parallel()
	date := time.Date(2026, 12, 2, 17, 4, 5, 123456789, time.UTC)
	for _, tc := range []struct {
		name string
		uri  string
		disc bool
		off  int64
		date time.Time
	}{
		{"a byte range of a media file", "v0.mp4", false, 760, date},
		{"a segment file after a discontinuity", "v0-00001.m4s", true, 0, date},
		{"a whole second", "a1.mp4", false, 1, date.Truncate(time.Second)},
		{"the zero date", "v0.mp4", false, 0, time.Time{}},
		{"a date with an offset", "v0.mp4", false, 0, date.In(time.FixedZone("", 5400))},
		{"a date past 9999", "v0.mp4", false, 0, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"a URI JSON escapes", "v<0>&\"\\\x01é\u2028.mp4", false, 0, date},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mine, want, mineErr, wantErr := hls.SegmentJSON(7, tc.uri, 4_000_000, 3_999_999, 123_456, tc.disc, tc.off, tc.date)
			if (mineErr != nil) != (wantErr != nil) {
				t.Fatalf("written with error %v, encoding/json's %v", mineErr, wantErr)
			}
			if mineErr != nil {
				return
			}
			if string(mine) != string(want) {
				t.Fatalf("written:\n%s\nwant, as encoding/json writes it:\n%s", mine, want)
			}
		})
	}
}
