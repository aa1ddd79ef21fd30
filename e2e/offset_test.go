package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/model"
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
	v := want["video"]
	for _, late := range []time.Duration{0, 5 * time.Second, 16 * time.Second, 41 * time.Second, -20 * time.Second} {
		t.Run(fmt.Sprint(late), func(t *testing.T) {
			began := 60 * time.Second
			// The join: the video keyframe of the loop at began+late
			// (frame 0 of the loop), the audio from the first frame
			// at or after it.
			loop := (began + late).Microseconds() / v.period
			base := v.ts[0] + loop*v.period
			pr := joinedAt(want, base)
			c := matrixCase{packaging: "legacy", container: "mp4", rebased: true}
			if d := offset(t, c, result{began: began}, pr, want); d != base {
				t.Fatalf("offset %d µs, want %d (%+.3f loops of the video)", d, base, float64(d-base)/float64(v.period))
			}
		})
	}
}

// joinedAt returns what ffprobe reads of a rebased file that joined the
// broadcast want at base (µs: the video's frame 0, the first keyframe of
// a loop): that keyframe at 0, then 20 audio frames from the first at or
// after base.
func joinedAt(want map[string]*published, base int64) mediatest.ProbeResult {
	v, a := want["video"], want["audio"]
	pr := mediatest.ProbeResult{Streams: []mediatest.Stream{{Index: 0, CodecType: "video"}, {Index: 1, CodecType: "audio"}}}
	pr.Packets = append(pr.Packets, mediatest.Packet{StreamIndex: 0, CodecType: "video",
		PTSTime: "0.000000", DataHash: v.hashes[0], Flags: "K_"})
	n := 0
	// (A CMAF track's times are moved by the video's reorder delay: the
	// loop before base's may end after it.)
	for l := base/a.period - 1; n < 20; l++ {
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
	return pr
}

// TestARebasedFileIsPlacedOnItsBroadcastsClockNotTheWallClock checks the
// time the rig says a recording began (rig.clock), from which offset
// places a rebased file: it is the broadcast's own clock, however far the
// publisher is from the wall clock. Under the race detector and two busy
// loops the CMAF broadcasts of the matrix ran 128-153 s behind the time
// since the rig started them (a CMAF frame costs the demo 30-40 times the
// CPU of a legacy one); the estimate from the wall clock was then 32-38
// loops off, beyond the 30 offset searches, and 7 CMAF cases reported
// their audio as the payloads published 48 frames later ("audio packet 0
// at 0.000000 s (frame 75): payload ..., published ...") or off the
// frames' times ("no published frame within 1000 µs"). Here the publisher
// is as far from the wall clock the other way: it published 33 loops
// (132 s) of media at once.
func TestARebasedFileIsPlacedOnItsBroadcastsClockNotTheWallClock(t *testing.T) {
	for _, packaging := range []string{"legacy", "cmaf"} {
		t.Run(packaging, func(t *testing.T) {
			want := publishedFrames(t)[packaging]
			v := want["video"]
			b := model.NewBroadcast(broadcastName(packaging))
			r := &rig{bcs: map[string]*model.Broadcast{b.Name(): b}}
			const loops = 33
			if err := demo.Publish(context.Background(), b, demo.Options{Container: catalog.ContainerKind(packaging),
				Loops: loops, KeepGroups: 1 << 20}); err != nil {
				t.Fatal(err)
			}
			began := r.clock(b.Name())
			// The recorder joined at the first keyframe of the last
			// loop of the video.
			base := v.ts[0] + (loops-1)*v.period
			pr := joinedAt(want, base)
			c := matrixCase{packaging: packaging, container: "mp4", rebased: true}
			if d := offset(t, c, result{began: began}, pr, want); d != base {
				t.Fatalf("began at %v: offset %d µs, want %d (%+.3f loops of the video)", began, d, base, float64(d-base)/float64(v.period))
			}
		})
	}
}
