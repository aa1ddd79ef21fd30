package cmdtest

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// RunSummary is what --summary writes, as far as these tests read it.
type RunSummary struct {
	Files []struct {
		Path string `json:"path"`
	} `json:"files"`
	PerTrack []struct {
		Track          string  `json:"track"`
		Kind           string  `json:"kind"`
		Received       int     `json:"received"`
		Written        int     `json:"written"`
		DroppedLate    int     `json:"dropped_late"`
		DroppedByMuxer int     `json:"dropped_by_muxer"`
		Malformed      int     `json:"dropped_malformed"`
		AfterEnd       int     `json:"after_end"`
		Gaps           int     `json:"gaps"`
		Lost           float64 `json:"lost_seconds"`
	} `json:"per_track"`
}

func ReadSummary(t *testing.T, path string) RunSummary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s RunSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	return s
}

// Written returns what the summary says the recording wrote of track.
func (s RunSummary) Written(track string) int {
	for _, pt := range s.PerTrack {
		if pt.Track == track {
			return pt.Written
		}
	}
	return 0
}

// StreamPackets is one stream of a file as ffprobe reads it: its codec and
// the sorted timestamps (s) and keyframe flags of its packets in pts order.
type StreamPackets struct {
	Codec string
	Pts   []float64 // sorted
	Key   []bool    // in file order
	// KeyPts are the keyframes' times, sorted; Reorder is
	// mediatest.Reorder of the times in file order (B-Frames).
	KeyPts  []float64
	Reorder float64
}

// PacketsByCodec reads every packet of path with ffprobe, by codec name.
func PacketsByCodec(t *testing.T, path string) map[string]*StreamPackets {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "stream=index,codec_name:packet=stream_index,pts_time,flags",
		"-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Streams []struct {
			Index int    `json:"index"`
			Codec string `json:"codec_name"`
		} `json:"streams"`
		Packets []struct {
			Stream int    `json:"stream_index"`
			PTS    string `json:"pts_time"`
			Flags  string `json:"flags"`
		} `json:"packets"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	byIndex := map[int]*StreamPackets{}
	byCodec := map[string]*StreamPackets{}
	for _, s := range p.Streams {
		sp := &StreamPackets{Codec: s.Codec}
		byIndex[s.Index], byCodec[s.Codec] = sp, sp
	}
	for _, pk := range p.Packets {
		sp := byIndex[pk.Stream]
		v, err := strconv.ParseFloat(pk.PTS, 64)
		if sp == nil || err != nil {
			continue
		}
		sp.Pts = append(sp.Pts, v)
		sp.Key = append(sp.Key, strings.Contains(pk.Flags, "K"))
		if strings.Contains(pk.Flags, "K") {
			sp.KeyPts = append(sp.KeyPts, v)
		}
	}
	for _, sp := range byCodec {
		sp.Reorder = mediatest.Reorder(sp.Pts)
		slices.Sort(sp.Pts)
		slices.Sort(sp.KeyPts)
	}
	return byCodec
}

// Frame durations of the demo media: H.264, H.265 and VP9 at 30 fps, AAC
// in 1024-sample and Opus in 960-sample Frames at 48 kHz.
var FrameDuration = map[string]float64{"h264": 1.0 / 30, "hevc": 1.0 / 30, "vp9": 1.0 / 30, "aac": 1024.0 / 48000, "opus": 960.0 / 48000}

// CheckContinuous fails when neighbouring packets of sp lie more than one
// and a half frame durations apart (a frame is missing).
func CheckContinuous(t *testing.T, what string, sp *StreamPackets) {
	t.Helper()
	d := FrameDuration[sp.Codec]
	for i := 1; i < len(sp.Pts); i++ {
		if gap := sp.Pts[i] - sp.Pts[i-1]; gap > 1.5*d {
			t.Errorf("%s: %s jumps %.3fs at %.3fs: frames are missing", what, sp.Codec, gap, sp.Pts[i-1])
		}
	}
}

func Keys(m map[string]*StreamPackets) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
