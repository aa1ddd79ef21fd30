package mux

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says whether a track carries video or audio.
type Kind int

// Track kinds.
const (
	Video Kind = iota + 1
	Audio
)

func (k Kind) String() string {
	switch k {
	case Video:
		return "video"
	case Audio:
		return "audio"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Track describes one rendition as the catalog announces it. Fields the
// catalog leaves out are zero.
type Track struct {
	// ID identifies the track in WriteFrame calls. It is unique within one
	// export and never reused, even after the track is removed.
	ID int
	// Name is the rendition's track name in the broadcast.
	Name string
	Kind Kind
	// Codec is the WebCodecs codec string from the catalog, for example
	// "avc1.64001f", "hev1.1.6.L93.B0", "av01.0.08M.08", "vp8",
	// "vp09.00.10.08", "mp4a.40.2", "opus", "flac", "mp3", "ac-3".
	Codec string
	// Description is the codec configuration record: avcC, hvcC, av1C,
	// AudioSpecificConfig, OpusHead or fLaC+STREAMINFO. Nil when the catalog has
	// none; H.264/H.265 frames then carry Annex B with in-band parameter sets.
	Description []byte
	// Width and Height are the coded size in pixels, when known.
	Width, Height int
	// Framerate in frames per second, when known.
	Framerate float64
	// SampleRate in Hz and Channels, for audio.
	SampleRate, Channels int
	// Jitter is the catalog's jitter: how long a frame may wait at the
	// publisher. For video with B-frames it bounds the reorder delay, which
	// muxers use as the DTS reserve.
	Jitter time.Duration
}

// CodecFamily returns the codec family of a WebCodecs codec string:
// "h264", "h265", "av1", "vp8", "vp9", "aac", "opus", "flac", "mp3", "mp2",
// "ac3", "eac3", "pcm", or "" when the string is not recognised.
func CodecFamily(codec string) string {
	c := strings.ToLower(codec)
	prefix := c
	if i := strings.IndexByte(c, '.'); i >= 0 {
		prefix = c[:i]
	}
	switch prefix {
	case "avc1", "avc3", "h264":
		return "h264"
	case "hvc1", "hev1", "h265", "hevc":
		return "h265"
	case "av01", "av1":
		return "av1"
	case "vp8":
		return "vp8"
	case "vp09", "vp9":
		return "vp9"
	case "mp4a":
		if c == "mp4a.40.34" || c == "mp4a.6b" || c == "mp4a.69" {
			return "mp3"
		}
		return "aac"
	case "aac":
		return "aac"
	case "opus":
		return "opus"
	case "flac":
		return "flac"
	case "mp3":
		return "mp3"
	case "mp2":
		return "mp2"
	case "ac-3", "ac3":
		return "ac3"
	case "ec-3", "eac3":
		return "eac3"
	case "pcm":
		return "pcm"
	}
	return ""
}

// CodecKind returns the kind of track a codec family (as CodecFamily
// returns it) belongs to: Video for "h264", "h265", "av1", "vp8" and "vp9",
// Audio for the other known families, and 0 for "" or an unknown family.
func CodecKind(family string) Kind {
	switch family {
	case "h264", "h265", "av1", "vp8", "vp9":
		return Video
	case "aac", "opus", "flac", "mp3", "mp2", "ac3", "eac3", "pcm":
		return Audio
	}
	return 0
}

// Frame is one encoded access unit of one track.
type Frame struct {
	// TrackID is the Track.ID this frame belongs to.
	TrackID int
	// Timestamp is the presentation time in microseconds, on the export's
	// timeline (the jitter buffer has already removed backward jumps; see
	// package jitter). Frames of one track come in decode order, so with
	// B-frames the timestamps of one track are not monotonic.
	Timestamp int64
	// Keyframe is true for a frame a decoder can start from. In hang's legacy
	// container it is the first frame of each group.
	Keyframe bool
	// Payload is the codec payload as the broadcast carries it: AVCC
	// length-prefixed NAL units when the track has a Description, Annex B
	// otherwise (H.264/H.265); raw frames for every other codec (AAC without
	// ADTS). The muxer must not keep Payload after WriteFrame returns.
	Payload []byte
	// Discontinuity is true when the track's timeline broke (gap,
	// reconnect, publisher restart) just before this frame, also when the
	// muxer then drops the frame.
	Discontinuity bool
}

// Muxer writes one container stream. Calls come from one goroutine.
//
// The engine calls AddTrack for every track it knows before the first
// WriteFrame; a muxer normally writes its header lazily at the first frame.
// A muxer whose format cannot take a track after the header returns an error
// wrapping ErrLateTrack from AddTrack; the engine then goes on without that
// track and says so.
type Muxer interface {
	// AddTrack adds a track. Errors wrap ErrUnsupportedCodec when the
	// container cannot carry the codec and ErrLateTrack when the header is
	// already written and the format cannot grow.
	AddTrack(Track) error
	// RemoveTrack drops a track that left the catalog or ended.
	RemoveTrack(id int) error
	// WriteFrame writes one frame. Frames arrive in non-decreasing
	// timestamp order across tracks, except for late frames that the jitter
	// buffer passes on by policy.
	WriteFrame(Frame) error
	// Stats returns the counters so far.
	Stats() Stats
	// Close flushes buffered data and finalizes the container; when the
	// underlying writer is an io.WriteSeeker it also rewrites the header
	// fields known only at the end (duration, size, index). Close does not
	// close the underlying writer.
	Close() error
}

// Sentinel errors shared by all muxers. Test with errors.Is.
var (
	// ErrUnsupportedCodec means the container cannot carry the track's codec.
	ErrUnsupportedCodec = errors.New("codec not supported by this container")
	// ErrLateTrack means a track was added after the header was written and
	// the container cannot add tracks mid-stream.
	ErrLateTrack = errors.New("track added after the header was written")
	// ErrUnknownTrack means a frame names a track that was never added.
	ErrUnknownTrack = errors.New("unknown track")
	// ErrClosed means the muxer was used after Close.
	ErrClosed = errors.New("muxer closed")
)

// UnsupportedCodecError reports a codec a container cannot carry, naming the
// codec and, when one exists, a container that can.
type UnsupportedCodecError struct {
	Container string // "flv", "mkv", "webm", "ts"
	Codec     string // codec string from the catalog
	Suggest   string // container that carries it, or ""
}

func (e *UnsupportedCodecError) Error() string {
	msg := fmt.Sprintf("%s cannot carry codec %q", e.Container, e.Codec)
	if e.Suggest != "" {
		msg += fmt.Sprintf("; use %s instead", e.Suggest)
	}
	return msg
}

// Unwrap makes errors.Is(err, ErrUnsupportedCodec) true.
func (e *UnsupportedCodecError) Unwrap() error { return ErrUnsupportedCodec }

// Stats counts what a muxer did with the frames it was given, with the same
// meaning in every muxer.
type Stats struct {
	Frames  int64 // frames written to the output
	Bytes   int64 // their payload bytes as WriteFrame received them
	Dropped int64 // frames given to WriteFrame but not written
}

// Discard is a Muxer that accepts everything and writes nothing. It is used
// by benchmarks and by callers that only want statistics.
type Discard struct {
	stats Stats
}

// AddTrack implements Muxer.
func (d *Discard) AddTrack(Track) error { return nil }

// RemoveTrack implements Muxer.
func (d *Discard) RemoveTrack(int) error { return nil }

// WriteFrame implements Muxer.
func (d *Discard) WriteFrame(f Frame) error {
	d.stats.Frames++
	d.stats.Bytes += int64(len(f.Payload))
	return nil
}

// Stats implements Muxer: every frame counts as written.
func (d *Discard) Stats() Stats { return d.stats }

// Close implements Muxer.
func (d *Discard) Close() error { return nil }
