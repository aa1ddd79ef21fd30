package flv

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/bluenviron/gortmplib/pkg/amf0"

	"github.com/moq-export/moq-export/mux"
)

// onMetaData goes through go-amf0 for its name and values and is framed
// here (go-amf0 orders an array by Go's map order): the bytes must be
// those of an AMF0 encoder that keeps the order it is given, gortmplib's,
// for every shape of header, and the same on every run.
func TestOnMetaDataIsTheOrderedECMAArrayAnotherAMF0EncoderWrites(t *testing.T) {
	video := func(w, h int, rate float64) *track {
		return &track{Track: mux.Track{Width: w, Height: h, Framerate: rate}, info: codecs["h264"]}
	}
	audio := func(rate, channels int) *track {
		return &track{Track: mux.Track{SampleRate: rate, Channels: channels}, info: codecs["aac"]}
	}
	tests := []struct {
		name         string
		video, audio *track
	}{
		{"video with size and rate and stereo audio", video(1280, 720, 30), audio(48000, 2)},
		{"video without size or rate and audio without rate or channels", video(0, 0, 0), audio(0, 0)},
		{"video only", video(640, 360, 29.97), nil},
		{"mono audio only", nil, audio(44100, 1)},
		{"no track at all", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := buildMetadata(tc.video, tc.audio)
			if err != nil {
				t.Fatal(err)
			}
			want := amf0.ECMAArray{{Key: "duration", Value: float64(0)}, {Key: "filesize", Value: float64(0)}}
			if v := tc.video; v != nil {
				if v.Width > 0 && v.Height > 0 {
					want = append(want, amf0.ObjectEntry{Key: "width", Value: float64(v.Width)}, amf0.ObjectEntry{Key: "height", Value: float64(v.Height)})
				}
				if v.Framerate > 0 {
					want = append(want, amf0.ObjectEntry{Key: "framerate", Value: v.Framerate})
				}
				want = append(want, amf0.ObjectEntry{Key: "videocodecid", Value: v.info.metaID})
			}
			if a := tc.audio; a != nil {
				want = append(want, amf0.ObjectEntry{Key: "audiocodecid", Value: a.info.metaID})
				if a.SampleRate > 0 {
					want = append(want, amf0.ObjectEntry{Key: "audiosamplerate", Value: float64(a.SampleRate)}, amf0.ObjectEntry{Key: "audiosamplesize", Value: float64(16)})
				}
				if a.Channels > 0 {
					want = append(want, amf0.ObjectEntry{Key: "stereo", Value: a.Channels > 1}, amf0.ObjectEntry{Key: "audiochannels", Value: float64(a.Channels)})
				}
			}
			want = append(want, amf0.ObjectEntry{Key: "encoder", Value: "moq-export"})
			wantBody, err := amf0.Data{"onMetaData", want}.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(m.body, wantBody) {
				t.Fatalf("onMetaData\n got % x\nwant % x", m.body, wantBody)
			}
			for range 20 {
				again, _ := buildMetadata(tc.video, tc.audio)
				if !bytes.Equal(again.body, m.body) {
					t.Fatal("onMetaData changed between two encodings of the same tracks")
				}
			}
			got, err := amf0.Unmarshal(m.body)
			if err != nil {
				t.Fatalf("gortmplib cannot read it back: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(amf0.Data{"onMetaData", want}) {
				t.Fatalf("read back %v, want %v", got, want)
			}
		})
	}
}
