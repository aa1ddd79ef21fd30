package h26x_test

import (
	"slices"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

func TestDTSIsStrictlyIncreasingAndNotAbovePTS(t *testing.T) {
	for _, vs := range videoSamples(t) {
		for _, form := range []string{"avcc", "annexb"} {
			t.Run(vs.codec.String()+"/"+form, func(t *testing.T) {
				s := vs.sample
				if form == "annexb" {
					s = s.MustAnnexB()
				}
				n := mustNormalizer(t, vs.codec, s.Description)
				d := h26x.NewDTS(vs.codec, 0)
				prev := int64(-1 << 62)
				reordered := 0
				for i, f := range s.Frames {
					units, err := n.Frame(f.Payload)
					if err != nil {
						t.Fatal(err)
					}
					dts := d.Next(n.ParamSets(), units, f.Timestamp)
					if dts <= prev {
						t.Fatalf("frame %d: DTS %d after %d", i, dts, prev)
					}
					if dts > f.Timestamp {
						t.Fatalf("frame %d: DTS %d > PTS %d", i, dts, f.Timestamp)
					}
					// Once the extractor has seen the reorder depth (two
					// B-frames), DTS trails PTS by at most the four frames
					// a P-frame after two B-frames needs (as in ffmpeg's
					// MP4 of the same stream).
					if i >= 3 && f.Timestamp-dts > 4*33334 {
						t.Fatalf("frame %d: DTS %d lags PTS %d by more than 4 frames", i, dts, f.Timestamp)
					}
					if i > 0 && f.Timestamp < s.Frames[i-1].Timestamp {
						reordered++
					}
					prev = dts
				}
				if reordered == 0 {
					t.Fatal("sample has no reordered frames; the test proves nothing")
				}
				if d.Fallbacks != 0 {
					t.Errorf("%d fallbacks on a clean stream", d.Fallbacks)
				}
			})
		}
	}
}

func TestDTSFallsBackToPTSMinusReserve(t *testing.T) {
	tests := []struct {
		name    string
		reserve time.Duration
		pts     []int64
		want    []int64
	}{
		{"default reserve", 0, []int64{0, 100000, 33333}, []int64{-100000, 0, 1}},
		{"catalog jitter as reserve", 50 * time.Millisecond, []int64{1000000, 1100000, 1033333, 1066666}, []int64{950000, 1050000, 1050001, 1050002}},
		{"PTS behind previous DTS", 10 * time.Millisecond, []int64{100000, 50000}, []int64{90000, 90001}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No parameter sets: the extractor cannot answer.
			d := h26x.NewDTS(h26x.H264, tt.reserve)
			for i, pts := range tt.pts {
				if got := d.Next(h26x.ParamSets{}, [][]byte{{0x41, 0x9a}}, pts); got != tt.want[i] {
					t.Errorf("frame %d: DTS %d, want %d", i, got, tt.want[i])
				}
			}
			if d.Fallbacks != len(tt.pts) {
				t.Errorf("Fallbacks = %d, want %d", d.Fallbacks, len(tt.pts))
			}
		})
	}
}

func TestDTSResetForgetsTheStream(t *testing.T) {
	vs := videoSamples(t)[0]
	n := mustNormalizer(t, vs.codec, vs.sample.Description)
	d := h26x.NewDTS(vs.codec, 0)
	run := func(base int64) int64 {
		var last int64
		for _, f := range vs.sample.Frames[:30] {
			units, err := n.Frame(f.Payload)
			if err != nil {
				t.Fatal(err)
			}
			last = d.Next(n.ParamSets(), units, base+f.Timestamp)
		}
		return last
	}
	end := run(10_000_000)
	d.Reset()
	units, _ := n.Frame(vs.sample.Frames[0].Payload)
	if got := d.Next(n.ParamSets(), units, 0); got != 0 || got >= end {
		t.Fatalf("after Reset the first keyframe at PTS 0 got DTS %d (before: %d)", got, end)
	}
	if d.Fallbacks != 0 {
		t.Errorf("%d fallbacks", d.Fallbacks)
	}
}

// TestDTSAfterAGapTrailsPTSAsBeforeIt feeds the samples with frames
// missing and no Reset, as a recording that lost groups without a word
// (late frames dropped, a group cut short, whole GOPs missed) hands them
// on: the next keyframe's DTS must trail its PTS by the stream's reorder
// delay at most, as at the start of a stream, not by a share of the gap.
// (Before, the extractor spread the gap over the frames after it: the
// H.264 keyframe 1.1 s after the last frame got a DTS 0.58 s before its
// PTS, and ffmpeg 5.1, guessing the frame rate from those decode times,
// repeated output timestamps of the MP4.) A gap too short to start again
// (one frame) may add its frames to the lag of the few frames after it:
// H.264's reorder window gives out the smallest PTS it holds, and the
// missing frame's is not among them until the window has moved past it.
func TestDTSAfterAGapTrailsPTSAsBeforeIt(t *testing.T) {
	for _, vs := range videoSamples(t) {
		for _, gap := range []struct {
			name     string
			from, to int // frames [from, to) of two loops are missing
			extra    int // frames of lag the gap may add
		}{
			{"GOPCutAndNextMissed", 27, 60, 0},
			{"WholeGOPsMissed", 30, 90, 0},
			{"GOPCutAndLoopBoundary", 77, 150, 0},
			{"OneFrameCut", 29, 30, 1},
		} {
			t.Run(vs.codec.String()+"/"+gap.name, func(t *testing.T) {
				s := vs.sample
				period := s.Duration()
				n := mustNormalizer(t, vs.codec, s.Description)
				d := h26x.NewDTS(vs.codec, 0)
				prev := int64(-1 << 62)
				for i := range 2 * len(s.Frames) {
					if i >= gap.from && i < gap.to {
						continue
					}
					f := s.Frames[i%len(s.Frames)]
					pts := f.Timestamp + int64(i/len(s.Frames))*period
					units, err := n.Frame(f.Payload)
					if err != nil {
						t.Fatal(err)
					}
					dts := d.Next(n.ParamSets(), units, pts)
					if dts <= prev {
						t.Fatalf("frame %d: DTS %d after %d", i, dts, prev)
					}
					if dts > pts {
						t.Fatalf("frame %d: DTS %d > PTS %d", i, dts, pts)
					}
					// As in TestDTSIsStrictlyIncreasingAndNotAbovePTS.
					if lag := 4 + gap.extra; i >= 3 && pts-dts > int64(lag)*33334 {
						t.Fatalf("frame %d (keyframe %v): DTS %d lags PTS %d by %d µs, more than %d frames", i, f.Keyframe, dts, pts, pts-dts, lag)
					}
					prev = dts
				}
				if d.Fallbacks != 0 {
					t.Errorf("%d fallbacks", d.Fallbacks)
				}
			})
		}
	}
}

// TestH264DTSAllocatesNothingPerFrameWhenTheSPSStatesItsReorderDepth: the
// h264 sample's SPS states its depth (x264 writes max_num_reorder_frames),
// so its decode times come from the presentation times alone: no slice
// header is read (mediacommon's extractor copies each one into a new
// buffer, an allocation per frame that was a tenth of an hour's export).
func TestH264DTSAllocatesNothingPerFrameWhenTheSPSStatesItsReorderDepth(t *testing.T) {
	s := videoSamples(t)[0].sample
	n := mustNormalizer(t, h26x.H264, s.Description)
	ps := n.ParamSets()
	units := make([][][]byte, len(s.Frames))
	for i, f := range s.Frames {
		u, err := n.Frame(f.Payload)
		if err != nil {
			t.Fatal(err)
		}
		units[i] = slices.Clone(u)
	}
	d := h26x.NewDTS(h26x.H264, 0)
	i, prev, period := 0, int64(-1), s.Duration()
	next := func() {
		f := s.Frames[i%len(s.Frames)]
		pts := f.Timestamp + int64(i/len(s.Frames))*period
		dts := d.Next(ps, units[i%len(s.Frames)], pts)
		if dts <= prev || dts > pts {
			t.Fatalf("frame %d: DTS %d after %d, PTS %d", i, dts, prev, pts)
		}
		prev = dts
		i++
	}
	for range 2 * len(s.Frames) {
		next()
	}
	if a := testing.AllocsPerRun(3*len(s.Frames), next); a != 0 {
		t.Errorf("%.2f allocations per frame, want none", a)
	}
	if d.Fallbacks != 0 {
		t.Errorf("%d fallbacks", d.Fallbacks)
	}
}

// TestH264DTSKeepsItsContractWhenTheStreamReordersDeeperThanItsSPSSays:
// frames that come later in decode order than the SPS's depth allows
// still get strictly increasing decode times, not above their presentation
// times unless a presentation time is not above a decode time given
// already (then the previous plus 1 µs, as Next says).
func TestH264DTSKeepsItsContractWhenTheStreamReordersDeeperThanItsSPSSays(t *testing.T) {
	s := videoSamples(t)[0].sample
	n := mustNormalizer(t, h26x.H264, s.Description)
	d := h26x.NewDTS(h26x.H264, 0)
	// The sample's SPS states two; frame 1 comes after three that follow it.
	order := []int64{0, 4, 3, 2, 1, 5, 8, 7, 6, 9}
	prev := int64(-1 << 62)
	for i, o := range order {
		units, err := n.Frame(s.Frames[i].Payload)
		if err != nil {
			t.Fatal(err)
		}
		pts := o * 33333
		dts := d.Next(n.ParamSets(), units, pts)
		switch {
		case dts <= prev:
			t.Fatalf("frame %d: DTS %d after %d", i, dts, prev)
		case pts <= prev && dts != prev+1:
			t.Fatalf("frame %d: PTS %d not above the previous DTS %d: DTS %d, want %d", i, pts, prev, dts, prev+1)
		case pts > prev && dts > pts:
			t.Fatalf("frame %d: DTS %d above PTS %d", i, dts, pts)
		}
		prev = dts
	}
}
