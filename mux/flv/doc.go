// Package flv writes FLV for the export engine: a Writer implements
// mux.Muxer over an io.Writer (a file, stdout, a pipe).
//
// # Codecs
//
// Classic FLV carries H.264 (CodecID 7: an AVC sequence header with the
// avcC, then NAL units with a signed 24-bit composition time for B-frames),
// AAC (SoundFormat 10: the AudioSpecificConfig, then raw frames) and MP3.
// Enhanced RTMP (v2, FourCC video and audio tags) carries HEVC ("hvc1",
// with composition time), AV1 ("av01"), VP9 ("vp09") and Opus ("Opus").
// Each of these starts with a SequenceStart tag: the catalog's description,
// or a record built from the catalog when it has none (the OpusHead a
// browser's encoder would write, from the sample rate and channel count; an
// av1C or vpcC from the codec string; an AudioSpecificConfig from
// "mp4a.40.N", the sample rate and channels). Other codecs (VP8, FLAC, PCM,
// MP2, AC-3...) are refused by AddTrack with a *mux.UnsupportedCodecError
// that suggests mkv or ts. Enhanced FLV needs a recent reader: ffmpeg 5.1
// (Debian 12) cannot read it, ffmpeg 7 and later can.
//
// H.264/H.265 frames go through internal/codec/h26x in both payload forms: Annex
// B without a description (the browser publisher) becomes length-prefixed
// NAL units, and the avcC/hvcC is built from the in-band parameter sets.
// Whenever those change mid-stream, a new sequence header is written
// before the frame. Video frames before the first keyframe, and before the
// first complete parameter sets, are dropped.
//
// # Timestamps
//
// FLV tag times are 32-bit milliseconds (24 bits plus an extension byte).
// By default the first frame becomes time 0 (Options.KeepTimestamps keeps
// the source clock; times past 2^32 ms then wrap, which ffmpeg unwraps).
// Tags carry decode times: for H.264/H.265 they come from the h26x DTS
// estimator (picture order count; else presentation time minus the catalog
// jitter, 100 ms by default), which puts the first keyframe's decode time
// at its presentation time, so video starts at 0 too. Decode times never go
// back within a kind and never below 0 (video strictly increases, clamped
// when needed); the composition offset PTS-DTS is signed. AV1 and VP9 carry
// no composition time: their decode order is their presentation order.
//
// Video presentation times are rounded to the millisecond that keeps each
// frame on its own tick of the 1/framerate grid counted from the file's
// first timestamp, not simply floored: 30 fps frames are 33.3 ms apart,
// and floored times put two frames on one tick every third frame when the
// file starts about half a frame off the video's grid (audio a few ms
// before the video's keyframe), which ffmpeg, rescaling decoded video to
// that grid, reports as non-monotonic timestamps. Every time stays within
// a millisecond of the frame's. The grid's rate is the catalog's
// framerate, else the one the H.264/H.265 SPS declares, else the one the
// frames show (muxbase.FrameGrid).
//
// A frame marked mux.Frame.Discontinuity keeps the timeline continuous. At
// the track's next written frame its decode-time estimate restarts, video waits for a keyframe and the
// sequence header is sent again (the publisher may have restarted with new
// settings). If that frame would go back in time, a global offset moves
// every track forward so that the track resumes one frame duration after
// its last frame, and audio and video stay aligned; a gap forward is kept
// as it is, since it is real time.
//
// # Tracks
//
// FLV holds one video and one audio track (Caps.PerKind; Supports says
// which tracks it carries at all). The first track of each kind that
// AddTrack accepts is used; later ones get an error wrapping ErrTrackLimit,
// which the engine logs as a warning, and their frames are ignored. After the header, a new track is accepted only to replace a
// removed one of the same kind and codec family; others get
// mux.ErrLateTrack.
//
// # Metadata
//
// The header is followed by an onMetaData script tag (width, height,
// framerate, videocodecid and audiocodecid, the FourCC as a number for
// Enhanced codecs, audio sample rate and channels, duration 0 and filesize
// 0 as for a live stream). When the output is an io.WriteSeeker whose Seek
// works, Close overwrites duration (from the first presented frame to the
// end of the last, also when KeepTimestamps starts the file far from 0) and
// filesize in place: AMF0 numbers are fixed-size, so nothing moves.
//
// # What is hand-written and why
//
// The FLV framing (file header, tag headers, PreviousTagSize) is written
// here, not with the Go FLV library github.com/yutopp/go-flv (v0.3.1, served
// when asked by exact version): its tag encoder takes an io.Reader per
// payload and allocates per tag, and knows no Enhanced RTMP (hvc1, av01,
// vp09, Opus). Measured (BenchmarkTagWriter, one H.264 frame's tag, on the
// shared 2-core machine under load): this writer 174-270 ns, 24 B and 1
// allocation per frame, the whole muxer included; go-flv's
// tag.EncodeFlvTag 935-1218 ns, 1294 B and 8 allocations for the framing
// alone. onMetaData goes through go-flv's go-amf0 (its name and every
// value: numbers, booleans, strings); the ECMA array around them (a marker,
// a count, each key's length-prefixed name) is framed here, because go-amf0
// and go-flv's tag.EncodeScriptData write an array only from a Go map, in
// map order, so the header bytes would change from run to run
// (TestGoFLVWouldWriteOnMetaDataInMapOrder shows it, and fails once that
// changes; TestOnMetaDataIsTheOrderedECMAArrayAnotherAMF0EncoderWrites
// holds the bytes to gortmplib's order-keeping encoder). go-flv
// is used where it fits: its decoder (with go-amf0) reads our classic FLV
// output in the tests, a reader written apart from this package and from
// ffmpeg (TestGoFLVReadsOurClassicFLVFrameForFrame). The
// AudioSpecificConfig and OpusHead built from catalog fields come from
// internal/codec/codecconf (shared with mux/mkv and mux/ts), and avcC/hvcC,
// Annex B conversion and decode times from internal/codec/h26x. The av1C and vpcC
// built from a codec string are 4 and 12 fixed bytes that no library
// offers.
package flv
