// Package mp4 writes MP4 for the export engine: Writer is a mux.Muxer over
// an io.Writer that records fragmented MP4 and, for a file, finishes it into
// a regular, seekable, fast-start MP4 when the recording stops cleanly.
//
// # What it owns
//
// The layout of both forms, the mapping of catalog tracks to sample entries
// (through mediacommon), the timeline (timestamps in µs become a 90 kHz
// clock for video and the sample rate for audio, rebased to 0 unless
// Options.KeepTimestamps), fragment placement, the sample table of the
// finished file and the finish itself. Codec payloads pass through
// untouched, except H.264/H.265 given as Annex B (or AVCC with 1- or 2-byte
// lengths), which internal/codec/h26x turns into 4-byte-length AVCC.
//
// # While recording: fragments
//
// The output starts with ftyp (isom, iso6) and a moov whose mvex declares
// that fragments follow, then one moof+mdat pair per fragment. A fragment
// is cut before every keyframe of the first video track, so each starts at
// a sync sample; an audio-only file is cut every Options.FragmentDuration
// (2 s); a GOP longer than 4 × FragmentDuration, a fragment over 32 MiB and
// a discontinuity cut one too. Only the fragment being built is held in
// memory. Each moof carries, per track, a tfdt (the decode time of its
// first sample; the default sample flags when they are shared) and a trun
// v1 with every sample's duration, size, flags where they differ and signed
// composition offset. A sample's duration is the distance to the
// next sample of its track, so a track's newest sample waits for its
// successor and opens the next fragment; across a discontinuity (and for
// the very last sample) it is the one its publisher gave
// (mux.Frame.Duration, hang's end marker), else the previous duration, so
// a gap never stretches a frame: the next fragment's tfdt carries the
// jump.
//
// This is what a pipe gets (Options.Path empty): CMAF-style fragmented MP4
// that ffplay and mpv play as it arrives (`moq-export -f mp4 | ffplay -`).
// A file killed at any moment (SIGKILL, power loss) is the same stream cut
// short: players read it up to its last whole fragment.
//
// # Clean stop: the finish
//
// When Options.Path names the file the io.Writer writes (the CLI sets it
// for every file output, so it happens at the end of a broadcast, at
// --duration, on Ctrl-C and at each segment rotation), Close turns the
// recording into a regular MP4: ftyp (isom, iso4), a moov with mvhd/tkhd/
// mdhd durations, edit lists and the complete sample table (stts, ctts v1,
// stss, stsc, stsz, stco or co64 past 4 GiB), then a single mdat (64-bit
// size past 4 GiB) with the samples of every fragment. moov comes before
// mdat (fast start), so a browser plays and seeks it over
// HTTP before it has the whole file.
//
// The finish works in place unless Options.FinishByCopy asks for a copy:
//
//   - In place (the default, on every file system): the finished header
//     (ftyp, the moov and the header of one mdat that spans the rest of the
//     file) is written over the file's first bytes, where the fragmented
//     header and the first fragments lie. The samples of the fragments it
//     covers (the first 1-2% of the media, as the moov is about 1% of the
//     file) are first copied to the end of the file, inside a free box, so
//     the file stays a valid fragmented recording until the one write of
//     the header; the chunk offsets point at them there. Every other sample
//     stays where its fragment put it, and the moof boxes become unused
//     bytes inside the mdat (about 1% of the file). The cost is that of the
//     moov, never of the media: reading and writing a few times the moov's
//     size (the moov of 30 minutes of 30 fps video with AAC is 0.9 MB, of 3
//     hours 6 MB), milliseconds, no extra disk space beyond that, no fsync,
//     and the file's cached pages stay cached. That the first samples lie
//     behind the others costs a player nothing it does not do anyway: a
//     browser or player reading over HTTP fetches them with one range
//     request, as for any seek (only a reader that cannot seek, such as
//     `cat file.mp4 | ffplay -`, needs FinishByCopy's file). A failure while copying (a full disk) cuts the copies off
//     again, leaving the fragmented file as it was; the one unsafe moment
//     is the write of the header itself (a crash during it leaves a file
//     whose start is torn), and a failed write puts the old bytes back.
//     Earlier versions inserted blocks in front (fallocate
//     FALLOC_FL_INSERT_RANGE): on ext4 that writes back and evicts the whole
//     file from the page cache, which took a fifth of the time of exporting
//     30 minutes of media as fast as it can (25 ms of 130 ms).
//   - By copy (Options.FinishByCopy): ftyp, the moov and an mdat with only
//     the samples, in recording order, go to a temporary file beside the
//     recording (".NAME.*.finishing"), which is renamed over it. Until the
//     rename the fragmented file stays complete and playable, and a failure
//     (a full disk) leaves it as it was. The samples are copied once
//     (io.CopyN between the two files, which Linux does in the kernel with
//     copy_file_range), so this takes about as long as copying the file (a
//     3 h recording at 6 Mbit/s is 8 GB: tens of seconds on an SSD) and
//     needs its size again in free space while it runs; a stray
//     ".finishing" file is what a crash during it leaves.
//
// An output that cannot rewrite what it wrote (an object store that
// uploaded it while recording) sets Options.FinishHead instead of Path:
// Close then hands it the head of the regular MP4 (ftyp, moov, the header
// of an mdat spanning every byte written after the fragmented header) and
// the offset those bytes start at; the head followed by them is the
// finished file, the moof boxes unused bytes inside its mdat. Nothing is
// read back or moved.
//
// Neither form is fsynced, like every output of moq-export. Memory is the
// sample table only, never the media: about 4 bytes per sample (stsz) plus
// a few per run of equal durations or offsets, per keyframe and per
// fragment, about 15 MB for 3 hours of 30 fps video with 48 kHz AAC; a
// stream (no Path) keeps no table at all.
//
// Each fragment goes to the io.Writer in one Write (moof, mdat header and
// every run), so a file takes one syscall per fragment, and a buffered
// output that passes on whole Writes (the CLI's file output, which flushes
// at least every 500 ms) never leaves a moof without its mdat. The largest
// run is written from its track's buffer, with the moof and the other runs
// copied into room kept in front of it, so no payload is copied twice.
// When the io.Writer has a Flush method (a bufio.Writer), the Writer calls
// it after every fragment.
//
// # Timestamps and B-frames
//
// The first frame of the file is at 0 unless Options.KeepTimestamps (which
// keeps the broadcast's times in the fragments' tfdt; the finished file
// starts at its first frame, since a regular MP4 has no start time other
// than an empty edit that players would show as blank). Video decode times
// come from h26x.DTS for H.264/H.265 (the reorder depth an H.264 SPS states,
// applied to the presentation times as ffmpeg does; else the picture order
// count; else PTS minus the catalog jitter), and equal presentation times
// for the other codecs. B-frames are written with non-negative composition
// offsets, not with negative ones: ffmpeg (so ffplay, mpv and Chromium's
// progressive player) shifts the presentation of fragments with negative
// offsets by the largest of them, which would put the video behind the
// audio. h26x.DTS gives a stream's first keyframe its presentation time as
// decode time and keeps later decode times at or before their presentation
// times, so an H.264/H.265 track's decode times start at its first
// presentation time (0 for the file's first frame, where ffmpeg's HLS muxer
// starts them too) and need no edit list. Only where its first decode time
// lies before its presentation time (h26x.DTS's fallback, by at most the
// catalog jitter) are both times delayed by that much, so that no decode
// time falls before the file's start, and an edit list (media_time = the
// delay) takes it off again, in the fragments' moov as in the finished one
// (trun and ctts are v1, signed, for the rare frame h26x.DTS cannot place).
// Earlier versions delayed every H.264/H.265 track by 100 ms (or the jitter)
// that way, and players of fragments that map the first decode time to the
// start and apply the edit list as well (hls.js and dash.js in Chromium)
// presented it that much early (see mux/hls). A finished file's samples and
// times are the same either way (its chunk offsets moved with the fragmented
// header's 44 bytes of edit list). In the finished file, where a track's
// sample times start at 0, a track that starts after the file (audio that
// begins a little after the video) gets an empty edit of that length first;
// the fragments carry the same start in their tfdt.
//
// # Codecs
//
// H.264 (avc1), H.265 (hvc1), AV1 (av01), VP9 (vp09), AAC (mp4a), Opus
// (Opus, mono or stereo), FLAC (fLaC), MP3 (mp4a, object type 0x6B), AC-3
// (ac-3) and E-AC-3 (ec-3); subtitles (mux.Text: webvtt, utf8) as 3GPP
// timed text (tx3g, see text.go). VP8, MP2 and PCM are refused by Supports with a
// *mux.UnsupportedCodecError suggesting webm/mkv (VP8) or mkv/ts (MP2).
// Sample entries whose configuration the catalog lacks wait for the first
// frame that carries it (SPS/PPS of Annex B H.264/H.265, the AV1 sequence
// header, the VP9 frame header, the AC-3/E-AC-3 and MP3 frame headers):
// meanwhile that track's frames are dropped and the other tracks' frames
// are buffered, for at most Options.HeaderWait (then the header is written
// without the tracks still waiting). A media track with no frame yet holds
// the header back the same way, and is left out of the moov when it is
// written (HeaderWait, or Close) while other tracks have frames: a track
// without a sample leaves ffmpeg unable to decode the file ("Cannot
// determine format"). Parameter sets that change after the header are kept
// in band on keyframes.
//
// # Late tracks and faults
//
// AddTrack after the header returns an error wrapping mux.ErrLateTrack: the
// fragments already written, and every byte a pipe has sent, were described
// by the moov players read first, and a track they do not declare would
// make the fragments unreadable to some players. The engine logs a warning
// and goes on without it, as with MKV. A write error is sticky: WriteFrame
// and Close return it, nothing more is written, and the fragments already
// written stay playable; Close then does not finish the file.
//
// # What comes from libraries and what is written here
//
// mediacommon (pkg/formats/fmp4, on abema/go-mp4) builds the moov of the
// fragments, with every sample entry and codec configuration box (avcC,
// hvcC, av1C, vpcC, esds, dOps, dfLa, dac3, dec3), and parses the codec
// headers. go-mp4 encodes the boxes of the finished moov that have a fixed
// layout (ftyp, mvhd, tkhd, mdhd, elst) and reads mediacommon's init back
// to reuse its sample entries. Written here: the moof (mediacommon's
// fmp4.Part needs an io.WriteSeeker and copies every payload into its own
// mdat buffer, go-mp4 encodes trun entries by reflection); the sample
// tables of the finished moov (flat arrays of millions of entries that
// go-mp4 would take as slices of structs and encode by reflection;
// mediacommon's pmp4 writes only 32-bit chunk offsets, sizes and
// durations, so it cannot finish a recording past 4 GiB or 13 hours, and
// needs every sample as a struct in memory); and the finish. mediacommon's
// dOps always says a pre-skip of 312 samples (libopus' value) and channel
// mapping family 0, so Opus with more than two channels is refused.
package mp4
