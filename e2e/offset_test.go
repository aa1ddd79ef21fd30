package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/mediatest"
)

// TestARebasedFileIsPlacedByItsAudioHoweverLateItsJoinCame checks offset,
// the check's placing of a file that starts at 0 (MP4, HLS) on the
// broadcast's timeline: the video's first packet says which keyframe of
// the 4 s loop it is, the audio (a loop 32 ms longer) which loop. A
// recording whose first connection was lost before its first frame (a
// disturbed case under load) joined 16 s after it began; the estimate from
// the time it began was then 4 loops off, and every audio packet was
// taken for the frame 6 frames later: "payload of frame 60 at frame 66".
func TestARebasedFileIsPlacedByItsAudioHoweverLateItsJoinCame(t *testing.T) {
	want := publishedFrames(t)["legacy"]
	v, a := want["video"], want["audio"]
	for _, late := range []time.Duration{0, 5 * time.Second, 16 * time.Second, 41 * time.Second, -20 * time.Second} {
		t.Run(fmt.Sprint(late), func(t *testing.T) {
			began := 60 * time.Second
			// The join: the video keyframe of the loop at began+late
			// (frame 0 of the loop), the audio from the first frame
			// at or after it.
			loop := (began + late).Microseconds() / v.period
			base := v.ts[0] + loop*v.period
			pr := mediatest.ProbeResult{Streams: []mediatest.Stream{{Index: 0, CodecType: "video"}, {Index: 1, CodecType: "audio"}}}
			pr.Packets = append(pr.Packets, mediatest.Packet{StreamIndex: 0, CodecType: "video",
				PTSTime: "0.000000", DataHash: v.hashes[0], Flags: "K_"})
			aloop := base / a.period
			n := 0
			for l := aloop; n < 20; l++ {
				for i, ts := range a.ts {
					at := ts + l*a.period
					if at < base || n >= 20 {
						continue
					}
					pr.Packets = append(pr.Packets, mediatest.Packet{StreamIndex: 1, CodecType: "audio",
						PTSTime: fmt.Sprintf("%.6f", float64(at-base)/1e6), DataHash: a.hashes[i]})
					n++
				}
			}
			c := matrixCase{packaging: "legacy", container: "mp4", rebased: true}
			if d := offset(t, c, result{began: began}, pr, want); d != base {
				t.Fatalf("offset %d µs, want %d (%+.3f loops of the video)", d, base, float64(d-base)/float64(v.period))
			}
		})
	}
}
