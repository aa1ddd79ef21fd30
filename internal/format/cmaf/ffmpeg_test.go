package cmaf_test

import (
	"testing"

	"github.com/moq-export/moq-export/internal/format/cmaf"
	"github.com/moq-export/moq-export/internal/testutil/cmaftest"
)

// TestFFmpegFragmentsDemuxToTheSourcePackets demuxes what `moq import fmp4`
// would publish for ffmpeg's fragmented MP4, in both forms, and compares
// every sample with the packet ffprobe lists in the plain MP4 the fragments
// were remuxed from: presentation time, size and keyframe flag.
func TestFFmpegFragmentsDemuxToTheSourcePackets(t *testing.T) {
	cmaftest.RequireFFmpeg(t)
	dir := t.TempDir()
	for _, c := range cmaftest.Codecs {
		src := cmaftest.Encode(t, dir, c, "2")
		want := cmaftest.Packets(t, "ffprobe", src, 0)
		for _, form := range []cmaftest.Form{cmaftest.EveryFrame, cmaftest.PerGOP} {
			t.Run(c.Name+"/"+cmaftest.FormName(form), func(t *testing.T) {
				f := cmaftest.Fragmented(t, src, form)
				if len(f.Inits) != 1 {
					t.Fatalf("%d tracks", len(f.Inits))
				}
				var got []cmaf.Sample
				var d *cmaf.Demuxer
				for id, init := range f.Inits {
					in, err := cmaf.ParseInit(init)
					if err != nil {
						t.Fatal(err)
					}
					if in.TrackID != id || in.Video != c.Video || in.Timescale != f.Timescales[id] {
						t.Fatalf("init %+v", in)
					}
					d = cmaf.NewDemuxer(in)
				}
				frames := 0
				for _, fr := range f.Fragments {
					ss, err := d.Fragment(fr.Data)
					if err != nil {
						t.Fatalf("fragment %d: %v", frames, err)
					}
					frames++
					for _, s := range ss {
						s.Payload = append([]byte(nil), s.Payload...)
						got = append(got, s)
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%d samples in %d fragments, source has %d packets", len(got), frames, len(want))
				}
				keys := 0
				for i := range got {
					dg, dw := got[i].Timestamp-got[0].Timestamp, want[i].PTS-want[0].PTS
					if diff := dg - dw; diff < -1 || diff > 1 || len(got[i].Payload) != want[i].Size || got[i].Keyframe != want[i].Key {
						t.Fatalf("sample %d: pts+%d size %d key %v, source pts+%d size %d key %v",
							i, dg, len(got[i].Payload), got[i].Keyframe, dw, want[i].Size, want[i].Key)
					}
					if got[i].Keyframe {
						keys++
					}
				}
				if c.Video && (keys < 2 || keys == len(got)) {
					t.Errorf("%d keyframes in %d samples", keys, len(got))
				}
				t.Logf("%d samples in %d fragments, %d keyframes", len(got), frames, keys)
			})
		}
	}
}
