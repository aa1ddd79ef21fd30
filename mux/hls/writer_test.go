package hls_test

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/mux"
	"github.com/moq-export/moq-export/mux/hls"
)

// fourRenditions is the package the tests record: two video renditions
// (H.264 and H.265), two audio (AAC and Opus), 12 s each.
func fourRenditions() []mediatest.Input {
	return []mediatest.Input{
		looped("h264", 0, 3),
		renamed(looped("h265", 1, 3), "hevc"),
		looped("aac", 2, 3),
		looped("opus", 3, 3),
	}
}

// record writes ins into a fresh package and closes it.
func record(t *testing.T, opts hls.Options, ins ...mediatest.Input) (*dirStore, *hls.Writer) {
	t.Helper()
	st := newStore(t)
	opts.Store = st
	w := hls.NewWriter(opts)
	mediatest.Feed(t, w, ins...)
	must(t, w.Close())
	return st, w
}

// pkgState is the package state file, as the tests read it.
type pkgState struct {
	Renditions []struct {
		ID, Name, Kind string
		Segments       []struct {
			N          int
			URI        string
			Start, Dur int64
			Disc       bool
		}
	}
}

func readState(t *testing.T, st *dirStore) pkgState {
	t.Helper()
	b, err := st.ReadFile("index.state.json")
	must(t, err)
	var s pkgState
	must(t, json.Unmarshal(b, &s))
	return s
}

// checkPackets compares what ffprobe reads from a media playlist with the
// frames given: count, key flags and presentation times within 1 ms of
// the frame's time on the package timeline (origin µs is its 0).
func checkPackets(t *testing.T, playlist string, in mediatest.Input, origin int64) {
	t.Helper()
	pk := mediatest.Probe(t, playlist).Packets
	if len(pk) != len(in.Frames) {
		t.Fatalf("%s: ffprobe reads %d packets, %d frames were written", playlist, len(pk), len(in.Frames))
	}
	for i, p := range pk {
		f := in.Frames[i]
		got, err := strconv.ParseFloat(p.PTSTime, 64)
		must(t, err)
		want := float64(f.Timestamp-origin) / 1e6
		if math.Abs(got-want) > 0.001 {
			t.Fatalf("%s packet %d: pts %.6f s, frame at %.6f s", playlist, i, got, want)
		}
		if key := strings.Contains(p.Flags, "K"); key != (f.Keyframe || in.Track.Kind == mux.Audio) {
			t.Fatalf("%s packet %d: key flag %v, frame keyframe %v", playlist, i, key, f.Keyframe)
		}
	}
}

// firstTimestamp is the earliest timestamp of the inputs: the package's 0.
func firstTimestamp(ins ...mediatest.Input) int64 {
	return mediatest.Interleave(ins...)[0].Timestamp
}

func TestEveryRenditionPlaysInFFmpegWithEveryFramePublished(t *testing.T) {
	t.Parallel()
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			ins := fourRenditions()
			st, _ := record(t, hls.Options{SegmentFiles: layout.files}, ins...)
			mediatest.DecodeClean(t, st.path("index.m3u8"))
			mediatest.DecodeClean(t, overHTTP(t, st, "index.mpd"))
			origin := firstTimestamp(ins...)
			probe := mediatest.Probe(t, st.path("index.m3u8"))
			if len(probe.Streams) < 4 {
				t.Fatalf("the multivariant playlist shows %d streams, want every rendition", len(probe.Streams))
			}
			for i, id := range []string{"v0", "v1", "a0", "a1"} {
				mediatest.DecodeClean(t, st.path(id+".m3u8"))
				checkPackets(t, st.path(id+".m3u8"), ins[i], origin)
			}
			// One media file per rendition, or a file per segment.
			if _, err := os.Stat(st.path("v0.mp4")); (err == nil) == layout.files {
				t.Errorf("v0.mp4 with SegmentFiles %v: %v", layout.files, err)
			}
		})
	}
}

var (
	bandwidthRE = regexp.MustCompile(`BANDWIDTH=(\d+),AVERAGE-BANDWIDTH=(\d+),CODECS="([^"]+)",RESOLUTION=(\d+x\d+),FRAME-RATE=([0-9.]+),AUDIO="([^"]+)"`)
	extinfRE    = regexp.MustCompile(`#EXTINF:([0-9.]+),`)
	targetRE    = regexp.MustCompile(`#EXT-X-TARGETDURATION:(\d+)`)
)

func TestTheMultivariantPlaylistMeasuresEveryVariant(t *testing.T) {
	t.Parallel()
	ins := fourRenditions()
	st, _ := record(t, hls.Options{}, ins...)
	b, err := st.ReadFile("index.m3u8")
	must(t, err)
	text := string(b)
	variants := bandwidthRE.FindAllStringSubmatch(text, -1)
	if len(variants) != 4 { // 2 video x 2 audio groups (AAC, Opus)
		t.Fatalf("%d variants, want 4:\n%s", len(variants), text)
	}
	// The bitrate of each variant: its video's and its audio's bytes over
	// their media time.
	size := func(id string) int64 {
		var n int64
		for _, b := range segmentBytes(t, st, id) {
			n += int64(len(b))
		}
		return n
	}
	for _, v := range variants {
		peak, _ := strconv.Atoi(v[1])
		avg, _ := strconv.Atoi(v[2])
		codecs := strings.Split(v[3], ",")
		vid, aud := "v0", "a0"
		if strings.HasPrefix(codecs[0], "hvc1") {
			vid = "v1"
		}
		if codecs[1] == "opus" {
			aud = "a1"
		}
		want := float64(size(vid)+size(aud)) * 8 / 12
		if math.Abs(float64(avg)-want)/want > 0.02 {
			t.Errorf("%s+%s: AVERAGE-BANDWIDTH %d, the segments make %.0f b/s", vid, aud, avg, want)
		}
		if peak < avg {
			t.Errorf("%s+%s: BANDWIDTH %d below AVERAGE-BANDWIDTH %d", vid, aud, peak, avg)
		}
		if v[4] != "320x180" || v[5] != "30.000" {
			t.Errorf("%s: RESOLUTION %s FRAME-RATE %s, want 320x180 and 30", vid, v[4], v[5])
		}
	}
	for _, want := range []string{`CODECS="avc1.64000d,mp4a.40.2"`, `CODECS="hvc1.1.6.L60.90,opus"`,
		`TYPE=AUDIO,GROUP-ID="audio-mp4a-40-2",NAME="aac"`, `TYPE=AUDIO,GROUP-ID="audio-opus",NAME="opus"`} {
		if !strings.Contains(text, want) {
			t.Errorf("multivariant playlist lacks %s:\n%s", want, text)
		}
	}
}

func TestSegmentsStartAtKeyframesNearTheTargetAlignedAcrossRenditions(t *testing.T) {
	t.Parallel()
	ins := fourRenditions()
	for _, target := range []time.Duration{2 * time.Second, 4 * time.Second, 3500 * time.Millisecond} {
		st, _ := record(t, hls.Options{SegmentDuration: target}, ins...)
		s := readState(t, st)
		lead := s.Renditions[0].Segments
		for _, r := range s.Renditions {
			if len(r.Segments) != len(lead) {
				t.Fatalf("target %v: %s has %d segments, v0 %d", target, r.ID, len(r.Segments), len(lead))
			}
			for i, seg := range r.Segments {
				// Video GOPs are 1 s: segments start on a keyframe at or
				// after the target; audio within one frame of the video.
				tol := int64(0)
				if r.Kind == "audio" {
					tol = 21_334
				}
				if d := seg.Start - lead[i].Start; d < 0 || d > tol {
					t.Errorf("target %v: %s segment %d starts at %d µs, video at %d", target, r.ID, i, seg.Start, lead[i].Start)
				}
				if i < len(r.Segments)-1 && (seg.Dur < target.Microseconds()-tol-1 || seg.Dur > target.Microseconds()+1_000_000) {
					t.Errorf("target %v: %s segment %d lasts %d µs", target, r.ID, i, seg.Dur)
				}
			}
			pl, err := st.ReadFile(r.ID + ".m3u8")
			must(t, err)
			td, _ := strconv.Atoi(targetRE.FindStringSubmatch(string(pl))[1])
			for _, m := range extinfRE.FindAllStringSubmatch(string(pl), -1) {
				d, _ := strconv.ParseFloat(m[1], 64)
				if int(math.Round(d)) > td {
					t.Errorf("target %v: %s: EXTINF %s over TARGETDURATION %d", target, r.ID, m[1], td)
				}
			}
		}
	}
}

func TestWhileRecordingEveryPlaylistIsAnEventNamingOnlyWrittenSegments(t *testing.T) {
	t.Parallel()
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			whileRecording(t, layout.files)
		})
	}
}

func whileRecording(t *testing.T, files bool) {
	ins := fourRenditions()
	st := newStore(t)
	w := hls.NewWriter(hls.Options{Store: st, SegmentFiles: files})
	frames := mediatest.Interleave(ins...)
	for _, tr := range mediatest.Tracks(ins...) {
		must(t, w.AddTrack(tr))
	}
	half := len(frames) * 2 / 3
	for _, f := range frames[:half] {
		must(t, w.WriteFrame(f))
	}
	// Each playlist was written after the segments (and playlists) it names.
	if len(st.early) > 0 {
		t.Fatalf("playlists named files before they were written: %v", st.early)
	}
	for _, id := range []string{"v0", "v1", "a0", "a1"} {
		b, err := st.ReadFile(id + ".m3u8")
		must(t, err)
		if !strings.Contains(string(b), "#EXT-X-PLAYLIST-TYPE:EVENT") || strings.Contains(string(b), "ENDLIST") {
			t.Fatalf("%s while recording:\n%s", id, b)
		}
	}
	// What is there plays, as a killed recording leaves it.
	mediatest.DecodeClean(t, closedCopy(t, st))
	for _, f := range frames[half:] {
		must(t, w.WriteFrame(f))
	}
	must(t, w.Close())
	if len(st.early) > 0 {
		t.Fatalf("playlists named files before they were written: %v", st.early)
	}
	b, err := st.ReadFile("v0.m3u8")
	must(t, err)
	if !strings.Contains(string(b), "#EXT-X-PLAYLIST-TYPE:VOD") || !strings.HasSuffix(string(b), "#EXT-X-ENDLIST\n") {
		t.Fatalf("v0 after Close:\n%s", b)
	}
}

func TestARestartContinuesThePackageAfterADiscontinuity(t *testing.T) {
	t.Parallel()
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			restartContinues(t, layout.files)
		})
	}
}

func restartContinues(t *testing.T, files bool) {
	ins := []mediatest.Input{looped("h264", 0, 2), looped("aac", 1, 2)}
	st := newStore(t)
	for run := range 2 {
		w := hls.NewWriter(hls.Options{Store: st, SegmentFiles: files})
		mediatest.Feed(t, w, ins...)
		must(t, w.Close())
		if c := w.Counters(); c.Continued != (run == 1) {
			t.Fatalf("run %d: Continued = %v", run, c.Continued)
		}
	}
	s := readState(t, st)
	for _, r := range s.Renditions {
		var nums []int
		discs := 0
		for _, seg := range r.Segments {
			nums = append(nums, seg.N)
			if seg.Disc {
				discs++
			}
		}
		if len(nums) != 4 || !slices.Equal(nums, []int{1, 2, 3, 4}) || discs != 1 || !r.Segments[2].Disc {
			t.Fatalf("%s after a restart: segments %v, %d discontinuities", r.ID, nums, discs)
		}
	}
	b, err := st.ReadFile("v0.m3u8")
	must(t, err)
	if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 || strings.Count(string(b), "#EXT-X-PROGRAM-DATE-TIME") != 2 {
		t.Fatalf("v0 after a restart:\n%s", b)
	}
	mpd, err := st.ReadFile("index.mpd")
	must(t, err)
	if n := strings.Count(string(mpd), "<Period "); n != 2 {
		t.Errorf("the MPD has %d Periods after a restart, want 2", n)
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
	for i, id := range []string{"v0", "a0"} {
		if n, want := len(mediatest.Probe(t, st.path(id+".m3u8")).Packets), 2*len(ins[i].Frames); n != want {
			t.Errorf("%s: %d packets over both runs, want %d", id, n, want)
		}
	}
}

func TestAnOutageIsADiscontinuityAndANewPeriod(t *testing.T) {
	t.Parallel()
	v, a := looped("h264", 0, 1), looped("aac", 1, 1)
	gap := int64(30_000_000)
	frames := mediatest.Interleave(v, a)
	frames = append(frames, mediatest.AfterDiscontinuity(mediatest.Interleave(v.Shift(gap), a.Shift(gap)))...)
	st := newStore(t)
	w := hls.NewWriter(hls.Options{Store: st})
	mediatest.Write(t, w, mediatest.Tracks(v, a), frames)
	must(t, w.Close())
	for _, id := range []string{"v0", "a0"} {
		b, err := st.ReadFile(id + ".m3u8")
		must(t, err)
		if strings.Count(string(b), "#EXT-X-DISCONTINUITY\n") != 1 {
			t.Errorf("%s:\n%s", id, b)
		}
		for _, m := range extinfRE.FindAllStringSubmatch(string(b), -1) {
			if d, _ := strconv.ParseFloat(m[1], 64); d > 5 {
				t.Errorf("%s: a segment of %s s spans the outage", id, m[1])
			}
		}
	}
	mpd, err := st.ReadFile("index.mpd")
	must(t, err)
	if n := strings.Count(string(mpd), "<Period "); n != 2 {
		t.Errorf("the MPD has %d Periods, want 2", n)
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
}

func TestSupportsAgreesWithAddTrack(t *testing.T) {
	t.Parallel()
	mediatest.CheckSupports(t, hls.Caps, func() mux.Muxer { return hls.NewWriter(hls.Options{Store: newStore(t)}) },
		"h264", "h265", "av1", "vp9", "aac", "opus", "flac", "ac3", "h264-annexb", "h265-annexb")
}

func TestLateTracksAndMissingStoresAreRefused(t *testing.T) {
	t.Parallel()
	w := hls.NewWriter(hls.Options{Store: newStore(t)})
	v := looped("h264", 0, 1)
	mediatest.Feed(t, w, v)
	if err := w.AddTrack(mediatest.SampleInput("aac", 1).Track); err == nil {
		t.Fatal("a track added after the first frame was accepted")
	}
	must(t, w.Close())
	if err := hls.NewWriter(hls.Options{}).AddTrack(v.Track); err == nil {
		t.Fatal("a Writer without a Store accepted a track")
	}
}

func TestARenditionThatSendsNothingHoldsNoManifestBack(t *testing.T) {
	t.Parallel()
	v, a := looped("h264", 0, 3), looped("aac", 1, 3)
	silent := mediatest.SampleInput("opus", 2)
	silent.Frames = nil
	st := newStore(t)
	w := hls.NewWriter(hls.Options{Store: st})
	mediatest.Write(t, w, mediatest.Tracks(v, a, silent), mediatest.Interleave(v, a))
	for _, name := range []string{"index.m3u8", "index.mpd", "index.state.json"} {
		if _, err := st.ReadFile(name); err != nil {
			t.Errorf("while a rendition sends nothing, %s is not written: %v", name, err)
		}
	}
	must(t, w.Close())
	b, err := st.ReadFile("index.m3u8")
	must(t, err)
	if strings.Contains(string(b), "opus") || !strings.Contains(string(b), "v0.m3u8") {
		t.Errorf("multivariant playlist with a silent rendition:\n%s", b)
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
}

// killedStore passes writes to a dirStore until the n-th media segment
// is complete, then refuses the next and every write after it: a
// recorder killed between a boundary's playlists and its state. A
// segment file is complete when written; a segment appended to its
// media file (ranged), which may take several writes, when its media
// playlist is written.
type killedStore struct {
	*dirStore
	n      int // the media segments written before the kill
	ranged bool
	segs   int
	dead   bool
}

func (k *killedStore) WriteFile(name string, data []byte) error {
	if strings.HasSuffix(name, ".m4s") || (k.ranged && (name == "v0.m3u8" || name == "a0.m3u8")) {
		k.segs++
		k.dead = k.dead || k.segs > k.n
	}
	if k.dead {
		return os.ErrClosed
	}
	return k.dirStore.WriteFile(name, data)
}

func (k *killedStore) WriteRange(name string, off int64, data []byte) error {
	if k.dead {
		return os.ErrClosed
	}
	return k.dirStore.WriteRange(name, off, data)
}

func TestARestartKeepsTheSegmentsPlaylistsNamedAfterTheState(t *testing.T) {
	t.Parallel()
	for _, layout := range layouts {
		t.Run(layout.name, func(t *testing.T) {
			t.Parallel()
			ins := []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}
			st := newStore(t)
			killed := &killedStore{dirStore: st, n: 4, ranged: !layout.files}
			opts := hls.Options{SegmentDuration: 2 * time.Second, SegmentFiles: layout.files}
			opts.Store = killed
			w := hls.NewWriter(opts)
			frames := mediatest.Interleave(ins...)
			for _, tr := range mediatest.Tracks(ins...) {
				must(t, w.AddTrack(tr))
			}
			for _, f := range frames {
				if w.WriteFrame(f) != nil {
					break
				}
			}
			named := map[string][]byte{}
			for _, id := range []string{"v0", "a0"} {
				maps.Copy(named, segmentBytes(t, st, id))
			}
			if len(named) != 4 {
				t.Fatalf("the killed recording's playlists name %d segments, want 2 each", len(named))
			}
			// The state, written at the first boundary, names fewer: the
			// second segment of each rendition is in its playlist only.
			for _, r := range readState(t, st).Renditions {
				if len(r.Segments) != 1 {
					t.Fatalf("the killed recording's state names %d segments of %s, want 1 (the playlists name 2)", len(r.Segments), r.ID)
				}
			}
			opts.Store = st
			w2 := hls.NewWriter(opts)
			mediatest.Feed(t, w2, looped("h264", 0, 1), looped("aac", 1, 1))
			must(t, w2.Close())
			now := map[string][]byte{}
			for _, id := range []string{"v0", "a0"} {
				maps.Copy(now, segmentBytes(t, st, id))
			}
			for name, data := range named {
				if !slices.Equal(now[name], data) {
					t.Errorf("the restart rewrote %s, which a playlist named", name)
				}
			}
			s := readState(t, st)
			for _, r := range s.Renditions {
				if len(r.Segments) < 4 || r.Segments[2].N != 3 || !r.Segments[2].Disc || r.Segments[1].Disc {
					t.Errorf("%s after the restart: %+v", r.ID, r.Segments)
				}
			}
			mediatest.DecodeClean(t, st.path("index.m3u8"))
		})
	}
}

// TestARestartCutsWhatAKilledRecordingWrotePastItsPlaylist: a recording
// killed while it appended a segment leaves bytes in the media file that
// no playlist names; the run that continues the package cuts them off
// before it appends, so the package plays every frame of both runs and
// the file holds exactly what its playlist names.
func TestARestartCutsWhatAKilledRecordingWrotePastItsPlaylist(t *testing.T) {
	t.Parallel()
	ins := []mediatest.Input{looped("h264", 0, 3), looped("aac", 1, 3)}
	st := newStore(t)
	w := hls.NewWriter(hls.Options{Store: st, SegmentDuration: 2 * time.Second})
	frames := mediatest.Interleave(ins...)
	for _, tr := range mediatest.Tracks(ins...) {
		must(t, w.AddTrack(tr))
	}
	for _, f := range frames[:len(frames)*2/3] {
		must(t, w.WriteFrame(f))
	}
	// Killed: no Close. What the playlists name plays.
	before := map[string]int{}
	closed := closedCopy(t, st)
	for _, id := range []string{"v0", "a0"} {
		before[id] = len(mediatest.Probe(t, st.path("closed-"+id+".m3u8")).Packets)
	}
	mediatest.DecodeClean(t, closed)
	// A partial segment after what they name: part of a moof.
	for _, id := range []string{"v0", "a0"} {
		f, err := os.OpenFile(st.path(id+".mp4"), os.O_WRONLY|os.O_APPEND, 0)
		must(t, err)
		_, err = f.Write([]byte("\x00\x00\x10\x00moof\x00\x00\x00\x10mfhd partial"))
		must(t, err)
		must(t, f.Close())
	}
	w2 := hls.NewWriter(hls.Options{Store: st, SegmentDuration: 2 * time.Second})
	mediatest.Feed(t, w2, ins...)
	must(t, w2.Close())
	if len(st.early) > 0 {
		t.Fatalf("playlists named bytes before they were written: %v", st.early)
	}
	mediatest.DecodeClean(t, st.path("index.m3u8"))
	mediatest.DecodeClean(t, overHTTP(t, st, "index.mpd"))
	for i, id := range []string{"v0", "a0"} {
		if n, want := len(mediatest.Probe(t, st.path(id+".m3u8")).Packets), before[id]+len(ins[i].Frames); n != want {
			t.Errorf("%s: %d packets, want %d named before the kill and %d of the restart", id, n, before[id], len(ins[i].Frames))
		}
		b, err := st.ReadFile(id + ".m3u8")
		must(t, err)
		m := byteRangeRE.FindAllStringSubmatch(string(b), -1)
		last := m[len(m)-1]
		n, _ := strconv.ParseInt(last[1], 10, 64)
		off, _ := strconv.ParseInt(last[2], 10, 64)
		fi, err := os.Stat(st.path(id + ".mp4"))
		must(t, err)
		if fi.Size() != off+n {
			t.Errorf("%s.mp4 holds %d bytes, its playlist names %d", id, fi.Size(), off+n)
		}
	}
}

// TestTheStateIsWrittenEveryFewBoundariesNotEveryOne: a 48 s package of
// 1 s segments (48 boundaries) writes its state at the first boundary,
// every 32nd and at the end, not at each; every playlist write still
// follows the segments it names (dirStore.early).
func TestTheStateIsWrittenEveryFewBoundariesNotEveryOne(t *testing.T) {
	t.Parallel()
	st, _ := record(t, hls.Options{SegmentDuration: time.Second}, looped("h264", 0, 12), looped("aac", 1, 12))
	states, mpds := 0, 0
	for _, name := range st.writes {
		switch name {
		case "index.state.json":
			states++
		case "index.mpd":
			mpds++
		}
	}
	if mpds < 40 || states != 3 {
		t.Fatalf("%d state writes and %d MPD writes for 48 boundaries: want the state at the first, the 32nd and the last", states, mpds)
	}
	if len(st.early) > 0 {
		t.Fatalf("playlists named files before they were written: %v", st.early)
	}
}
