package mux

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind says whether a track carries video, audio or text.
type Kind int

// Track kinds.
const (
	Video Kind = iota + 1
	Audio
	// Text is a subtitle or caption track: sparse cues, each a Frame with
	// a Duration. A container that carries no text refuses it in Supports.
	Text
)

func (k Kind) String() string {
	switch k {
	case Video:
		return "video"
	case Audio:
		return "audio"
	case Text:
		return "text"
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
	// Codec is the catalog's WebCodecs codec string ("avc1.64001f",
	// "mp4a.40.2", "opus", ...).
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
	// Jitter is the catalog's jitter (how long a frame may wait at the
	// publisher): with B-frames it bounds the reorder delay.
	Jitter time.Duration
	// Language is the BCP 47 language tag ("en", "pt-BR") and Label a
	// human-readable name, when the catalog gives them.
	Language, Label string
	// Role is a text track's accessibility role: "subtitle" or "caption".
	Role string
}

// CodecFamily returns the codec family of a WebCodecs codec string:
// "h264", "h265", "av1", "vp8", "vp9", "aac", "opus", "flac", "mp3", "mp2",
// "ac3", "eac3", "pcm", the text formats "webvtt" (hang's "vtt") and
// "utf8", or "" when the string is not recognised.
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
	case "vtt", "webvtt", "wvtt":
		return "webvtt"
	case "utf8", "text":
		return "utf8"
	}
	return ""
}

// CodecKind returns the kind of track a codec family (as CodecFamily
// returns it) belongs to: Video for "h264", "h265", "av1", "vp8" and "vp9",
// Audio for the other known media families, Text for "webvtt" and "utf8",
// and 0 for "" or an unknown family.
func CodecKind(family string) Kind {
	switch family {
	case "h264", "h265", "av1", "vp8", "vp9":
		return Video
	case "aac", "opus", "flac", "mp3", "mp2", "ac3", "eac3", "pcm":
		return Audio
	case "webvtt", "utf8":
		return Text
	}
	return 0
}

// Frame is one encoded access unit of one track.
type Frame struct {
	// TrackID is the Track.ID this frame belongs to.
	TrackID int
	// Timestamp is the presentation time in microseconds on the export's
	// timeline. Frames of a track come in decode order, so with B-frames
	// its timestamps are not monotonic.
	Timestamp int64
	// Keyframe is true for a frame a decoder can start from.
	Keyframe bool
	// Discontinuity is true when the track's timeline broke (gap,
	// reconnect, publisher restart) just before this frame, also when the
	// muxer then drops the frame.
	Discontinuity bool
	// Duration is how long a text cue shows, in microseconds. For video
	// and audio frames it is 0 (the next frame gives their duration) but
	// where the publisher's end marker said where the frame ends before it
	// was written (package jitter sets it; mux.FrameEnder hears it in any
	// case).
	Duration int64
	// Payload is the codec payload as the broadcast carries it: AVCC
	// length-prefixed NAL units when the track has a Description, Annex B
	// otherwise (H.264/H.265); raw frames for every other codec (AAC without
	// ADTS); for a WebVTT track one cue in WebM's block layout (its
	// identifier, a newline, its settings, a newline, its text), for a
	// UTF-8 track the text. The muxer must not keep Payload after
	// WriteFrame returns.
	Payload []byte
}

// Muxer writes one container stream, from one goroutine. The engine adds
// the tracks it knows before the first WriteFrame; a muxer writes its header
// lazily, and one that cannot grow after it refuses later tracks with
// ErrLateTrack.
type Muxer interface {
	// AddTrack adds a track; errors wrap ErrUnsupportedCodec, ErrTrackLimit
	// or ErrLateTrack.
	AddTrack(Track) error
	// RemoveTrack drops a track that left the catalog or ended.
	RemoveTrack(id int) error
	// WriteFrame writes one frame, in non-decreasing timestamp order across
	// tracks (but for late frames the jitter buffer passes by policy).
	WriteFrame(Frame) error
	// Stats returns the counters so far.
	Stats() Stats
	// Close finalizes the container (on an io.WriteSeeker also the header
	// fields known only at the end); it does not close the writer.
	Close() error
}

// FrameEnder is a Muxer that keeps frame durations and can be told where
// a track's frame ends when its publisher says so (hang's end marker):
// the engine calls EndFrame right after WriteFrame of that frame, before
// the track's next one. A muxer uses it where no next frame gives the
// duration: the last frame, the one before a discontinuity.
type FrameEnder interface {
	// EndFrame says the frame written last on track id ends at end
	// (microseconds, on the timeline of WriteFrame).
	EndFrame(id int, end int64) error
}

// Chapterer is a Muxer that can mark a point of its output with a named
// chapter (MKV chapters, MP4 chapter list): the optional capability of the
// containers that have them.
type Chapterer interface {
	// Chapter marks timestamp ts (microseconds, on the timeline of
	// WriteFrame) with a chapter called name. A chapter lasts until the
	// next one, or the end.
	Chapter(ts int64, name string) error
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
	// ErrTrackLimit means the container carries no more tracks of the kind
	// (Caps.PerKind).
	ErrTrackLimit = errors.New("track limit reached")
)

// UnsupportedCodecError names a codec a container cannot carry and, if
// any, one that can.
type UnsupportedCodecError struct {
	Container string // "flv", "mkv", "webm", "ts", "mp4"
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

// Stats counts what a muxer did with its frames, the same in every muxer.
type Stats struct {
	Frames  int64 // frames written to the output
	Bytes   int64 // their payload bytes as WriteFrame received them
	Dropped int64 // frames given to WriteFrame but not written
}

// Discard is a Muxer that writes nothing and counts every frame as written.
type Discard struct {
	stats Stats
}

func (d *Discard) AddTrack(Track) error  { return nil }
func (d *Discard) RemoveTrack(int) error { return nil }
func (d *Discard) Close() error          { return nil }
func (d *Discard) Stats() Stats          { return d.stats }

func (d *Discard) WriteFrame(f Frame) error {
	d.stats.Frames++
	d.stats.Bytes += int64(len(f.Payload))
	return nil
}
