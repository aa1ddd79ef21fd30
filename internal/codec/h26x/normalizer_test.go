package h26x_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/moq-export/moq-export/internal/codec/h26x"
)

func mustNormalizer(t testing.TB, c h26x.Codec, desc []byte) *h26x.Normalizer {
	t.Helper()
	n, err := h26x.NewNormalizer(c, desc)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNormalizerGivesSameUnitsForBothForms(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			browser := vs.sample.MustAnnexB()
			if browser.Description != nil {
				t.Fatal("Annex B sample still has a description")
			}
			avcc := mustNormalizer(t, vs.codec, vs.sample.Description)
			annexB := mustNormalizer(t, vs.codec, nil)
			if annexB.Config() != nil {
				t.Fatal("Config before any frame is not nil")
			}
			if !bytes.Equal(avcc.Config(), vs.sample.Description) {
				t.Fatal("Config of the AVCC track is not its description")
			}
			want, err := h26x.BuildDecoderConfig(vs.codec, avcc.ParamSets())
			if err != nil {
				t.Fatal(err)
			}
			for i := range vs.sample.Frames {
				a, err := avcc.Frame(vs.sample.Frames[i].Payload)
				if err != nil {
					t.Fatalf("frame %d AVCC: %v", i, err)
				}
				as := unitsString(a)
				b, err := annexB.Frame(browser.Frames[i].Payload)
				if err != nil {
					t.Fatalf("frame %d Annex B: %v", i, err)
				}
				if bs := unitsString(b); as != bs || len(a) == 0 {
					t.Fatalf("frame %d: units differ or are empty:\nAVCC    %.80s\nAnnex B %.80s", i, as, bs)
				}
				for _, u := range a {
					if h26x.IsParameterSet(vs.codec, u) || h26x.IsAUD(vs.codec, u) {
						t.Fatalf("frame %d: parameter set or AUD in the output", i)
					}
				}
				if avcc.ConfigChanged() {
					t.Fatalf("frame %d: AVCC track reports a config change", i)
				}
				if got := annexB.ConfigChanged(); got != (i == 0) {
					t.Fatalf("frame %d: Annex B ConfigChanged = %v, want %v", i, got, i == 0)
				}
				if !bytes.Equal(annexB.Config(), want) {
					t.Fatalf("frame %d: Annex B Config\n% x\nwant\n% x", i, annexB.Config(), want)
				}
				if !annexB.ParamSets().Equal(avcc.ParamSets()) {
					t.Fatalf("frame %d: parameter sets differ", i)
				}
			}
		})
	}
}

// annexBFrame builds an Annex B payload from units.
func annexBFrame(units ...[]byte) []byte { return h26x.AppendAnnexB(nil, units) }

func TestNormalizerFollowsInBandParamSetChange(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			orig, _, err := h26x.ParseDecoderConfig(vs.codec, vs.sample.Description)
			if err != nil {
				t.Fatal(err)
			}
			n := mustNormalizer(t, vs.codec, vs.sample.Description)
			key := vs.sample.Frames[0].Payload
			keyUnits, _ := h26x.SplitAVCC(key, 4)

			// The same sets in band change nothing.
			same := h26x.AppendAVCC(nil, append(orig.NALUs(), keyUnits...))
			got, err := n.Frame(same)
			if err != nil || unitsString(got) != unitsString(keyUnits) {
				t.Fatalf("frame with repeated sets: %v, units %d want %d", err, len(got), len(keyUnits))
			}
			if n.ConfigChanged() || !bytes.Equal(n.Config(), vs.sample.Description) {
				t.Fatal("repeating the description's sets in band changed the config")
			}

			// A new PPS (other pps id bits) changes the record; the SPS stays.
			pps := bytes.Clone(orig.PPS[0])
			pps[len(pps)-1] ^= 0x40
			if _, err := n.Frame(h26x.AppendAVCC(nil, [][]byte{pps})); err != nil {
				t.Fatal(err)
			}
			if !n.ConfigChanged() {
				t.Fatal("new PPS: ConfigChanged = false")
			}
			if n.ConfigChanged() {
				t.Fatal("ConfigChanged did not clear")
			}
			ps, _, err := h26x.ParseDecoderConfig(vs.codec, n.Config())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(ps.PPS[0], pps) || !bytes.Equal(ps.SPS[0], orig.SPS[0]) {
				t.Fatal("new config does not hold the new PPS and the old SPS")
			}
			if !n.ParamSets().Equal(ps) {
				t.Fatal("ParamSets and Config disagree")
			}

			// Back to the original sets: the description again.
			if _, err := n.Frame(h26x.AppendAVCC(nil, orig.PPS)); err != nil {
				t.Fatal(err)
			}
			if !n.ConfigChanged() || !bytes.Equal(n.Config(), vs.sample.Description) {
				t.Fatal("returning to the description's sets did not restore the description")
			}
		})
	}
}

func TestNormalizerAbsorbsParamSetOnlyFramesAndAUDs(t *testing.T) {
	for _, vs := range videoSamples(t) {
		t.Run(vs.codec.String(), func(t *testing.T) {
			ps, _, _ := h26x.ParseDecoderConfig(vs.codec, vs.sample.Description)
			n := mustNormalizer(t, vs.codec, nil)
			units, err := n.Frame(annexBFrame(append([][]byte{h26x.AUD(vs.codec)}, ps.NALUs()...)...))
			if err != nil {
				t.Fatal(err)
			}
			if len(units) != 0 {
				t.Fatalf("parameter-set-only frame gave %d units", len(units))
			}
			if n.Config() == nil || !n.ConfigChanged() {
				t.Fatal("parameter-set-only frame did not set the config")
			}
			p1, _ := h26x.SplitAVCC(vs.sample.Frames[1].Payload, 4)
			units, err = n.Frame(annexBFrame(append([][]byte{h26x.AUD(vs.codec)}, p1...)...))
			if err != nil {
				t.Fatal(err)
			}
			if unitsString(units) != unitsString(p1) {
				t.Fatal("AUD not dropped")
			}
			if n.ConfigChanged() {
				t.Fatal("frame without sets changed the config")
			}
		})
	}
}

func TestNormalizerConfigStaysNilUntilSetsAreComplete(t *testing.T) {
	ps, _, _ := h26x.ParseHEVCDecoderConfig(videoSamples(t)[1].sample.Description)
	n := mustNormalizer(t, h26x.H265, nil)
	steps := []struct {
		units   [][]byte
		hasConf bool
	}{
		{ps.SPS, false},
		{ps.PPS, false},
		{ps.VPS, true},
	}
	for i, s := range steps {
		if _, err := n.Frame(annexBFrame(s.units...)); err != nil {
			t.Fatal(err)
		}
		if got := n.Config() != nil; got != s.hasConf {
			t.Fatalf("step %d: has config = %v, want %v", i, got, s.hasConf)
		}
		if got := n.ConfigChanged(); got != s.hasConf {
			t.Fatalf("step %d: ConfigChanged = %v, want %v", i, got, s.hasConf)
		}
	}
}

func TestNormalizerRejectsMalformedFrames(t *testing.T) {
	desc := videoSamples(t)[0].sample.Description
	good := videoSamples(t)[0].sample.Frames[0].Payload
	tests := []struct {
		name    string
		desc    []byte
		payload []byte
		err     error
	}{
		{"truncated AVCC", desc, good[:len(good)-1], h26x.ErrTruncated},
		{"Annex B on an AVCC track", desc, annexBFrame([]byte{0x41, 0x9a, 0x02, 0x03, 0x04, 0x05}), h26x.ErrTruncated},
		{"AVCC on an Annex B track", nil, good, h26x.ErrNoStartCode},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := mustNormalizer(t, h26x.H264, tt.desc)
			before := n.Config()
			units, err := n.Frame(tt.payload)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if units != nil || !bytes.Equal(n.Config(), before) || n.ConfigChanged() {
				t.Fatal("a rejected frame changed the state or returned units")
			}
		})
	}
}

func TestNormalizerReportsUnbuildableInBandSPS(t *testing.T) {
	n := mustNormalizer(t, h26x.H264, nil)
	units, err := n.Frame(annexBFrame([]byte{0x67, 0x64, 0}, []byte{0x68, 0xee, 0x3c, 0x80}, []byte{0x65, 0x88}))
	if !errors.Is(err, h26x.ErrBadParamSet) {
		t.Fatalf("err = %v, want ErrBadParamSet", err)
	}
	if len(units) != 1 || n.Config() != nil {
		t.Fatalf("units %d, config %v; want the slice and no config", len(units), n.Config())
	}
}

func TestNewNormalizerRejectsBadInput(t *testing.T) {
	if _, err := h26x.NewNormalizer(h26x.H264, []byte{1, 2, 3}); !errors.Is(err, h26x.ErrBadConfig) {
		t.Errorf("bad avcC: err = %v", err)
	}
	if _, err := h26x.NewNormalizer(h26x.H265, videoSamples(t)[0].sample.Description); !errors.Is(err, h26x.ErrBadConfig) {
		t.Errorf("avcC for H.265: err = %v", err)
	}
	if _, err := h26x.NewNormalizer(h26x.Codec(7), nil); !errors.Is(err, h26x.ErrUnknownCodec) {
		t.Errorf("unknown codec: err = %v", err)
	}
}
