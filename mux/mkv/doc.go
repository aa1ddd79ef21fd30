// Package mkv writes Matroska and WebM for the export engine: Writer is a
// mux.Muxer over an io.Writer.
//
// # What it owns
//
// The container layout, the mapping of catalog tracks to TrackEntries
// (CodecID, CodecPrivate, geometry, Opus CodecDelay/SeekPreRoll), the
// timeline (timestamps in µs become a millisecond Matroska timeline rebased
// to 0 unless Options.KeepTimestamps; a video frame goes to the millisecond
// around its time that keeps it on its own tick of the 1/framerate grid a
// reader counts from the file's start, see below), Cluster placement, Cues and the
// finalization of seekable output. Codec records are parsed with mediacommon
// and the codec payloads are passed through untouched (H.264/H.265 given as
// Annex B are converted to length-prefixed NAL units by internal/codec/h26x).
//
// # Two forms
//
// To a pipe or any writer that cannot seek, the output is the live form: an
// EBML header, a Segment of unknown size, SeekHead+Info+Tracks, then
// Clusters of unknown size holding SimpleBlocks (keyframe flag set on video
// keyframes and on every audio frame). One Write call per frame, no
// buffering beyond it, so the file is playable as it grows and after a
// crash.
//
// To an io.WriteSeeker that can seek (a regular file; an *os.File on a pipe
// fails its Seek and gets the live form) the same bytes are written, and
// Close finalizes them: it appends Cues (one CuePoint per video keyframe,
// or per Cluster in audio-only files), patches the size of every Cluster
// and of the Segment, and rewrites the space reserved after the Segment
// start with a SeekHead that also points at the Cues and an Info with the
// Duration (followed by a Void). Until Close the file is a valid live-form
// file, so an interrupted recording stays playable; the CLI routes Ctrl-C
// to Close. With Options.KeepSizesUnknown (an output that uploaded what
// it wrote) Close leaves the Segment and the Clusters of unknown size and
// rewrites only the head: SeekHead and Info (Duration), Cues appended.
//
// A new Cluster starts at every video keyframe (except that audio before
// the first one shares the first Cluster), after Options.MaxClusterDuration,
// whenever the signed 16-bit block offset would overflow, and at the first
// block of a frame marked mux.Frame.Discontinuity. The frame-duration
// estimate used for Duration never spans a gap; a frame whose end its
// publisher gave (mux.FrameEnder, hang's end marker) ends the Duration
// there instead. Media frames are SimpleBlocks, but a frame that arrives
// with its duration (mux.Frame.Duration: the end marker came before the
// frame was written) is a BlockGroup with that BlockDuration, and a
// ReferenceBlock when it is not a keyframe; text cues are BlockGroups
// with their duration.
//
// # Video times on the millisecond timeline
//
// 30 fps frames are 33.3 ms apart, so on whole milliseconds they lie 33, 33
// and 34 ms apart, each up to half a millisecond off its time. ffmpeg
// decodes video onto a 1/framerate grid counted from the file's start (the
// earliest block, usually the audio's; ffmpeg 5.1 counts Opus its
// CodecDelay earlier, ffmpeg 9 does not) and, when that start lies about
// half a frame off the video's grid, found two frames on one tick every
// third frame ("non monotonically increasing dts to muxer ... 5 >= 5").
// So of the two milliseconds around a video frame's time the Writer takes
// the one on the frame's own tick of each reader's grid
// (muxbase.FrameGrid), at the catalog's framerate, else the one the
// H.264/H.265 SPS declares, else the one the frames show.
//
// # DocType
//
// "webm" when every track is VP8, VP9, AV1 or Opus, otherwise "matroska";
// Options.DocType "webm" refuses other codecs with a *mux.UnsupportedCodecError
// suggesting mkv. H.264, H.265, AV1, VP8, VP9, Opus, AAC, FLAC, MP3, MP2,
// AC-3 and E-AC-3 are carried; anything else is refused.
//
// # Header wait
//
// The header is written once every track has its configuration from the
// catalog and every media track a frame (text tracks are sparse and wait
// for nothing). A track that must take it from its first
// keyframe (Annex B H.264/H.265: SPS/PPS(/VPS) for the avcC/hvcC; AV1
// without av1C: the sequence header; VP8/VP9 without a size: the frame
// header) holds the header back: meanwhile that track's frames before such
// a keyframe are dropped and counted in mux.Stats.Dropped (they cannot be
// decoded anyway), and the other tracks' frames are buffered. After
// Options.HeaderWait of buffered media the header is written without the
// tracks still waiting, which are logged and dropped from then on. A media
// track with no frame yet holds the header back the same way: a track in
// the header that carries nothing leaves ffmpeg unable to decode the file
// ("Cannot determine format"). When the header is written (HeaderWait, or
// Close) while other tracks have frames, it is left out; a seekable file
// adds it at its first frame (Late tracks), a live stream goes on without it.
//
// # Late tracks
//
// A seekable file keeps 4 KiB of Void after Tracks. A track added after
// the header (a rendition a catalog update adds mid-recording) is written
// into it: Tracks is rewritten in place with the new TrackEntry and the
// track's blocks follow from there, so the finished file (and any player
// that opens it from the start) carries it. A track whose configuration
// only comes with its first keyframe (H.264 in Annex B without a
// description, AV1 without av1C: a browser publisher whose catalog lists
// its audio first) is described when that keyframe arrives; its frames
// before it are dropped and counted. A live stream cannot grow its Tracks
// once players read them, and the room holds about a dozen entries: those
// AddTrack calls return an error wrapping mux.ErrLateTrack (past the room,
// a track waiting for its keyframe is dropped then, with a warning), and
// the engine and the CLI go on without the track and log a warning.
//
// # Why part of it is hand-written
//
// ebml-go encodes every element here (EBML header, SeekHead, Info, Tracks,
// Cluster starts, Cues) from structs. Its own block writer (mkvcore) does
// not fit a recorder: it runs a goroutine per writer that panics on a write
// error unless given a handler (and with one, stops, so later writes block
// forever), cannot start a Cluster on
// demand (discontinuity), never writes the Segment size and downsamples Cues
// into space reserved up front. So the Writer drives the layout itself and
// writes three things by hand: the SimpleBlock header (a few bytes per
// frame; ebml-go's reflective marshaller would copy every payload through a
// buffer), the 8-byte size patches at Close, and Void padding. mediacommon
// parses OpusHead, AudioSpecificConfig, AV1 sequence headers and VP9 frame
// headers; internal/codec/codecconf (shared with mux/flv and mux/ts) builds the
// AudioSpecificConfig and OpusHead of tracks without a description; the
// av1C record (no writer in mediacommon) and the VP8 frame size (six bytes,
// no parser in mediacommon) are done here.
package mkv
