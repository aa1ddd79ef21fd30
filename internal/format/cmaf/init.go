package cmaf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	amp4 "github.com/abema/go-mp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
)

// ErrMalformed means an init segment or a fragment that does not parse.
var ErrMalformed = errors.New("cmaf: malformed")

// MaxInitSize bounds an init segment: real ones are a few hundred bytes to
// a few kilobytes (parameter sets included).
const MaxInitSize = 1 << 20

// Init is what a rendition's init segment declares about its one track.
type Init struct {
	// TrackID is the tkhd track id. Fragments normally carry the same one
	// in their tfhd.
	TrackID uint32
	// Timescale is the mdhd timescale: sample times are in 1/Timescale s.
	Timescale uint32
	// Family is the codec family in mux.CodecFamily's terms: "h264",
	// "h265", "av1", "vp8", "vp9", "aac", "opus", "flac", "mp3", "ac3",
	// "eac3".
	Family string
	// Video is true for a video track.
	Video bool
	// Width and Height are the sample entry's size (video).
	Width, Height int
	// SampleRate and Channels are the sample entry's (audio).
	SampleRate, Channels int
	// Description is the codec configuration record in hang's terms: the
	// avcC, hvcC or av1C box body, the AudioSpecificConfig of the esds,
	// an OpusHead made from the dOps, or "fLaC" and the dfLa metadata
	// blocks. Nil for VP8, VP9, MP3, AC-3 and E-AC-3, which need none.
	Description []byte
	// NALLength is the NAL unit length size of H.264/H.265 samples (from
	// the avcC/hvcC; 4 otherwise).
	NALLength int
	// The trex defaults for samples whose tfhd and trun leave them out.
	DefaultDuration, DefaultSize, DefaultFlags uint32
}

// initScan is what the go-mp4 walk collects for the first track.
type initScan struct {
	trackID   uint32
	haveTrak  bool
	traks     int
	entry     string // sample entry fourcc
	width     int
	height    int
	rate      int
	channels  int
	config    map[string][]byte // config box type -> body
	trex      map[uint32]*amp4.Trex
	entryDone bool
}

// sampleEntries are the sample entries whose children hold the codec
// configuration.
var sampleEntries = map[string]bool{
	"avc1": true, "hvc1": true, "hev1": true, "av01": true, "vp08": true, "vp09": true,
	"mp4a": true, "Opus": true, "fLaC": true, "ac-3": true, "ec-3": true,
}

// ParseInit parses an init segment (ftyp+moov) with one track. A moov with
// several tracks is read for its first one.
func ParseInit(b []byte) (*Init, error) {
	if len(b) > MaxInitSize {
		return nil, fmt.Errorf("%w: init segment of %d bytes", ErrMalformed, len(b))
	}
	sc, err := scanInit(b)
	if err != nil {
		return nil, err
	}
	var mc fmp4.Init
	mcErr := unmarshalInit(&mc, b)
	in := &Init{TrackID: sc.trackID, Width: sc.width, Height: sc.height, SampleRate: sc.rate, Channels: sc.channels, NALLength: 4}
	switch {
	case mcErr == nil:
		if len(mc.Tracks) == 0 {
			return nil, fmt.Errorf("%w: init without a track", ErrMalformed)
		}
		t := mc.Tracks[0]
		if uint32(t.ID) != sc.trackID {
			return nil, fmt.Errorf("%w: init's first track %d is not one this package can read", ErrMalformed, sc.trackID)
		}
		in.Timescale = t.TimeScale
		if err := in.fromCodec(t.Codec, sc); err != nil {
			return nil, err
		}
	case sc.entry == "vp08":
		// mediacommon does not know VP8: the walk has what it needs.
		ts, err := scanTimescale(b)
		if err != nil {
			return nil, err
		}
		in.Timescale, in.Family, in.Video = ts, "vp8", true
	default:
		return nil, fmt.Errorf("%w: init: %w", ErrMalformed, mcErr)
	}
	if in.Timescale == 0 {
		return nil, fmt.Errorf("%w: init with timescale 0", ErrMalformed)
	}
	if tx := sc.trex[sc.trackID]; tx != nil {
		in.DefaultDuration, in.DefaultSize, in.DefaultFlags = tx.DefaultSampleDuration, tx.DefaultSampleSize, tx.DefaultSampleFlags
	}
	return in, nil
}

// unmarshalInit runs mediacommon's parser; should it (or go-mp4 under it)
// panic on a malformed init it was not written for, that is an error too.
func unmarshalInit(mc *fmp4.Init, b []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unparsable init (%v)", r)
		}
	}()
	return mc.Unmarshal(bytes.NewReader(b))
}

// fromCodec fills the codec fields from mediacommon's codec and the raw
// records of the walk.
func (in *Init) fromCodec(c codecs.Codec, sc *initScan) error {
	cfg := sc.config
	switch c := c.(type) {
	case *codecs.H264:
		in.Family, in.Video, in.Description = "h264", true, cfg["avcC"]
		if len(in.Description) < 5 {
			return fmt.Errorf("%w: avcC of %d bytes", ErrMalformed, len(in.Description))
		}
		in.NALLength = int(in.Description[4]&3) + 1
	case *codecs.H265:
		in.Family, in.Video, in.Description = "h265", true, cfg["hvcC"]
		if len(in.Description) < 22 {
			return fmt.Errorf("%w: hvcC of %d bytes", ErrMalformed, len(in.Description))
		}
		in.NALLength = int(in.Description[21]&3) + 1
	case *codecs.AV1:
		in.Family, in.Video, in.Description = "av1", true, cfg["av1C"]
	case *codecs.VP9:
		in.Family, in.Video = "vp9", true
		in.Width, in.Height = c.Width, c.Height
	case *codecs.MPEG4Audio:
		in.Family = "aac"
		asc, err := ascOf(cfg["esds"])
		if err != nil {
			return err
		}
		in.Description = asc
		if in.SampleRate == 0 {
			in.SampleRate = c.Config.SampleRate
		}
	case *codecs.MPEG1Audio:
		in.Family = "mp3"
	case *codecs.Opus:
		in.Family = "opus"
		head, rate, err := opusHeadOf(cfg["dOps"])
		if err != nil {
			return err
		}
		in.Description = head
		// The sample entry says 48000 for every Opus track; the dOps
		// carries the input rate, which the catalog reports.
		if rate > 0 {
			in.SampleRate = rate
		}
		if c.ChannelCount > 0 {
			in.Channels = c.ChannelCount
		}
	case *codecs.FLAC:
		in.Family = "flac"
		in.Description = append([]byte("fLaC"), cfg["dfLa"][min(4, len(cfg["dfLa"])):]...)
		if c.StreamInfo != nil {
			in.SampleRate, in.Channels = int(c.StreamInfo.SampleRate), int(c.StreamInfo.ChannelCount)
		}
	case *codecs.AC3:
		in.Family, in.SampleRate, in.Channels = "ac3", c.SampleRate, c.ChannelCount
	case *codecs.EAC3:
		in.Family, in.SampleRate, in.Channels = "eac3", c.SampleRate, c.ChannelCount
	default:
		return fmt.Errorf("%w: init codec %T is not one hang carries", ErrMalformed, c)
	}
	return nil
}

// scanInit walks the init with go-mp4 and collects, for its first track,
// what mediacommon does not keep.
func scanInit(b []byte) (sc *initScan, err error) {
	defer func() {
		if r := recover(); r != nil {
			sc, err = nil, fmt.Errorf("%w: unparsable init (%v)", ErrMalformed, r)
		}
	}()
	sc = &initScan{config: map[string][]byte{}, trex: map[uint32]*amp4.Trex{}}
	_, err = amp4.ReadBoxStructure(bytes.NewReader(b), func(h *amp4.ReadHandle) (any, error) {
		typ := h.BoxInfo.Type.String()
		path := len(h.Path)
		switch {
		case typ == "moov" && path == 1, typ == "mvex" && path == 2:
			return h.Expand()
		case typ == "trex" && path == 3:
			box, _, err := h.ReadPayload()
			if err != nil {
				return nil, err
			}
			if tx, ok := box.(*amp4.Trex); ok {
				sc.trex[tx.TrackID] = tx
			}
			return nil, nil
		case typ == "trak" && path == 2:
			sc.traks++
			if sc.traks > 1 {
				return nil, nil // the first track only
			}
			sc.haveTrak = true
			return h.Expand()
		}
		if sc.traks != 1 {
			return nil, nil
		}
		switch {
		case typ == "tkhd" && path == 3:
			box, _, err := h.ReadPayload()
			if err != nil {
				return nil, err
			}
			if tk, ok := box.(*amp4.Tkhd); ok {
				sc.trackID = tk.TrackID
			}
		case (typ == "mdia" && path == 3) || (typ == "minf" && path == 4) || (typ == "stbl" && path == 5) || (typ == "stsd" && path == 6):
			return h.Expand()
		case path == 7 && sampleEntries[typ] && !sc.entryDone:
			sc.entry, sc.entryDone = typ, true
			box, _, err := h.ReadPayload()
			if err != nil {
				return nil, err
			}
			switch e := box.(type) {
			case *amp4.VisualSampleEntry:
				sc.width, sc.height = int(e.Width), int(e.Height)
			case *amp4.AudioSampleEntry:
				sc.rate, sc.channels = int(e.SampleRate>>16), int(e.ChannelCount)
			}
			return h.Expand()
		case path == 8 && sc.entryDone:
			switch typ {
			case "avcC", "hvcC", "av1C", "vpcC", "dOps", "dfLa", "esds", "dac3", "dec3":
				start, end := h.BoxInfo.Offset+h.BoxInfo.HeaderSize, h.BoxInfo.Offset+h.BoxInfo.Size
				if end > uint64(len(b)) || start > end {
					return nil, fmt.Errorf("%s box beyond the init", typ)
				}
				if _, dup := sc.config[typ]; !dup {
					sc.config[typ] = bytes.Clone(b[start:end])
				}
			}
		}
		return nil, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: init: %w", ErrMalformed, err)
	}
	if !sc.haveTrak {
		return nil, fmt.Errorf("%w: init without a track", ErrMalformed)
	}
	if !sc.entryDone {
		return nil, fmt.Errorf("%w: init track %d has no sample entry this package reads", ErrMalformed, sc.trackID)
	}
	return sc, nil
}

// scanTimescale reads the first track's mdhd timescale, for the tracks
// mediacommon does not parse.
func scanTimescale(b []byte) (ts uint32, err error) {
	defer func() {
		if r := recover(); r != nil {
			ts, err = 0, fmt.Errorf("%w: unparsable init (%v)", ErrMalformed, r)
		}
	}()
	found := false
	_, err = amp4.ReadBoxStructure(bytes.NewReader(b), func(h *amp4.ReadHandle) (any, error) {
		if found {
			return nil, nil
		}
		switch h.BoxInfo.Type.String() {
		case "moov", "trak", "mdia":
			return h.Expand()
		case "mdhd":
			box, _, err := h.ReadPayload()
			if err != nil {
				return nil, err
			}
			if m, ok := box.(*amp4.Mdhd); ok {
				ts, found = m.Timescale, true
			}
		}
		return nil, nil
	})
	if err != nil {
		return 0, fmt.Errorf("%w: init: %w", ErrMalformed, err)
	}
	if !found {
		return 0, fmt.Errorf("%w: init without mdhd", ErrMalformed)
	}
	return ts, nil
}

// ascOf returns the AudioSpecificConfig of an esds box body (DecoderSpecificInfo).
func ascOf(esds []byte) ([]byte, error) {
	if len(esds) < 4 {
		return nil, fmt.Errorf("%w: esds of %d bytes", ErrMalformed, len(esds))
	}
	var box amp4.Esds
	if _, err := amp4.Unmarshal(bytes.NewReader(esds), uint64(len(esds)), &box, amp4.Context{}); err != nil {
		return nil, fmt.Errorf("%w: esds: %w", ErrMalformed, err)
	}
	for _, d := range box.Descriptors {
		if d.Tag == amp4.DecSpecificInfoTag && len(d.Data) > 0 {
			return bytes.Clone(d.Data), nil
		}
	}
	return nil, fmt.Errorf("%w: esds without an AudioSpecificConfig", ErrMalformed)
}

// opusHeadOf converts a dOps box body (big-endian, ISO/IEC 14496-12 Opus
// mapping) into the OpusHead identification header (RFC 7845,
// little-endian) that hang's description carries. It also returns the
// input sample rate.
func opusHeadOf(dops []byte) ([]byte, int, error) {
	if len(dops) < 11 {
		return nil, 0, fmt.Errorf("%w: dOps of %d bytes", ErrMalformed, len(dops))
	}
	channels, family := dops[1], dops[10]
	if channels == 0 {
		return nil, 0, fmt.Errorf("%w: dOps with 0 channels", ErrMalformed)
	}
	head := make([]byte, 19, 21+int(channels))
	copy(head, "OpusHead")
	head[8] = 1
	head[9] = channels
	binary.LittleEndian.PutUint16(head[10:], binary.BigEndian.Uint16(dops[2:]))
	rate := binary.BigEndian.Uint32(dops[4:])
	binary.LittleEndian.PutUint32(head[12:], rate)
	binary.LittleEndian.PutUint16(head[16:], binary.BigEndian.Uint16(dops[8:]))
	head[18] = family
	if family != 0 {
		table := dops[11:]
		if len(table) < 2+int(channels) {
			return nil, 0, fmt.Errorf("%w: dOps channel mapping of %d bytes for %d channels", ErrMalformed, len(table), channels)
		}
		head = append(head, table[:2+int(channels)]...)
	}
	return head, int(rate), nil
}
