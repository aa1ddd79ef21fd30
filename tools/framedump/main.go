// Command framedump turns `ffprobe -show_streams -show_packets -show_data -of
// json` output for a one-stream file into the frame dump format that
// package internal/samples reads. It is a build-time tool for scripts/mktestdata.sh.
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"strings"

	"github.com/moq-export/moq-export/internal/samples"
)

type probe struct {
	Streams []struct {
		CodecName  string `json:"codec_name"`
		CodecType  string `json:"codec_type"`
		Profile    string `json:"profile"`
		Width      int    `json:"width"`
		Height     int    `json:"height"`
		SampleRate string `json:"sample_rate"`
		Channels   int    `json:"channels"`
		RFrameRate string `json:"r_frame_rate"`
		TimeBase   string `json:"time_base"`
		Extradata  string `json:"extradata"`
		Level      int    `json:"level"`
	} `json:"streams"`
	Packets []struct {
		PTS   int64  `json:"pts"`
		Flags string `json:"flags"`
		Data  string `json:"data"`
	} `json:"packets"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "framedump:", err)
		os.Exit(1)
	}
}

// unhexdump parses ffprobe's "00000000: 0000 0001 ....  text" hexdump.
func unhexdump(s string) ([]byte, error) {
	var out []byte
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		_, rest, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("bad hexdump line %q", line)
		}
		if len(rest) > 40 {
			rest = rest[:40]
		}
		b, err := hex.DecodeString(strings.ReplaceAll(rest, " ", ""))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

func run(r io.Reader, w io.Writer) error {
	var p probe
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		return err
	}
	if len(p.Streams) != 1 {
		return fmt.Errorf("want one stream, got %d", len(p.Streams))
	}
	st := p.Streams[0]
	desc, err := unhexdump(st.Extradata)
	if err != nil {
		return fmt.Errorf("extradata: %w", err)
	}
	tb, ok := new(big.Rat).SetString(st.TimeBase)
	if !ok {
		return fmt.Errorf("bad time base %q", st.TimeBase)
	}
	s := samples.Sample{Kind: st.CodecType, Width: st.Width, Height: st.Height, Channels: st.Channels}
	fmt.Sscan(st.SampleRate, &s.SampleRate)
	if fr, ok := new(big.Rat).SetString(st.RFrameRate); ok && st.CodecType == "video" {
		s.Framerate, _ = fr.Float64()
	}
	s.Codec, s.Description = codecString(st.CodecName, desc, st.SampleRate)
	for _, pk := range p.Packets {
		data, err := unhexdump(pk.Data)
		if err != nil {
			return fmt.Errorf("packet: %w", err)
		}
		us := new(big.Rat).Mul(new(big.Rat).SetInt64(pk.PTS), tb)
		us.Mul(us, big.NewRat(1000000, 1))
		ts := new(big.Int).Quo(us.Num(), us.Denom()).Int64()
		s.Frames = append(s.Frames, samples.SampleFrame{Timestamp: ts, Keyframe: strings.HasPrefix(pk.Flags, "K"), Payload: data})
	}
	// Encoder priming gives audio negative timestamps; a hang publisher's
	// timeline starts at or after zero (the wire cannot carry negative
	// absolute timestamps to every peer), so shift the clip.
	shift := int64(0)
	for _, f := range s.Frames {
		shift = min(shift, f.Timestamp)
	}
	for i := range s.Frames {
		s.Frames[i].Timestamp -= shift
	}
	bw := bufio.NewWriter(w)
	if err := s.Encode(bw); err != nil {
		return err
	}
	return bw.Flush()
}

// codecString derives the WebCodecs codec string the way a hang publisher
// would write it into the catalog.
func codecString(name string, desc []byte, _ string) (string, []byte) {
	switch name {
	case "h264":
		if len(desc) >= 4 {
			return fmt.Sprintf("avc1.%02x%02x%02x", desc[1], desc[2], desc[3]), desc
		}
	case "hevc":
		return "hvc1.1.6.L93.B0", desc
	case "av1":
		return "av01.0.04M.08", desc
	case "vp8":
		return "vp8", nil
	case "vp9":
		return "vp09.00.10.08", nil
	case "aac":
		return "mp4a.40.2", desc
	case "opus":
		return "opus", desc
	case "mp3":
		return "mp3", nil
	case "flac":
		// ffmpeg's extradata is the bare STREAMINFO; hang's description is
		// the "fLaC" marker plus the STREAMINFO metadata block (last-block
		// flag set, type 0, 24-bit length).
		if len(desc) == 34 {
			desc = append([]byte{'f', 'L', 'a', 'C', 0x80, 0, 0, 34}, desc...)
		}
		return "flac", desc
	case "ac3":
		return "ac-3", nil
	}
	return name, desc
}
