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
// lengths), which internal/h26x turns into 4-byte-length AVCC.
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
// first sample) and a trun v1 with every sample's duration, size, flags and
// signed composition offset. A sample's duration is the distance to the
// next sample of its track, so a track's newest sample waits for its
// successor and opens the next fragment; across a discontinuity (and for
// the very last sample) it is the previous duration, so a gap never
// stretches a frame: the next fragment's tfdt carries the jump.
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
// mdhd durations and the complete sample table (stts, ctts v1, stss, stsc,
// stsz, stco or co64 past 4 GiB), then a single mdat (64-bit size past
// 4 GiB) with the samples of every fragment in recording order. moov comes
// before mdat (fast start), so a browser plays and seeks it over HTTP
// before it has the whole file.
//
// The finish writes a temporary file beside the recording
// (".NAME.*.finishing") and renames it over the recording. It does not
// rewrite in place, because moving the samples to make room for the moov
// in front would leave a file that is neither form if it were interrupted;
// with a rename the fragmented file stays complete and playable until the
// finished one replaces it atomically, and a failure (a full disk) leaves
// the fragmented file as it was and returns an error saying so. The cost:
// the samples are copied once (io.CopyN between the two files, which Linux
// does in the kernel with copy_file_range, and on reflink file systems
// without copying data at all), so finishing a multi-hour recording takes
// about as long as copying the file (a 3 h recording at 6 Mbit/s is 8 GB:
// tens of seconds on an SSD) and needs its size again in free disk space
// while it runs. Memory is the sample table only, never the media: about
// 4 bytes per sample (stsz) plus a few per run of equal durations or
// offsets, per keyframe and per fragment, about 15 MB for 3 hours of 30 fps
// video with 48 kHz AAC. A stray ".finishing" file is what a crash during
// the finish leaves; the recording itself is intact.
//
// # Timestamps and B-frames
//
// The first frame of the file is at 0 unless Options.KeepTimestamps. Video
// decode times come from h26x.DTS for H.264/H.265 (the picture order count,
// else PTS minus the catalog jitter), and equal presentation times for the
// other codecs. Composition offsets are signed (trun v1 and ctts v1,
// brands iso6/iso4), and each track's decode timeline is shifted so that
// its first sample's decode time equals its presentation time: B-frames
// then have negative offsets and no edit list is needed to start the video
// at its first PTS. In the finished file a track that starts after 0 (audio
// that begins a little after the video) gets an edit list with an empty
// edit of that length, since sample times in stts start at 0; the
// fragments carry the same start in their tfdt.
//
// # Codecs
//
// H.264 (avc1), H.265 (hvc1), AV1 (av01), VP9 (vp09), AAC (mp4a), Opus
// (Opus, mono or stereo), FLAC (fLaC), MP3 (mp4a, object type 0x6B), AC-3
// (ac-3) and E-AC-3 (ec-3). VP8, MP2 and PCM are refused by Supports with a
// *mux.UnsupportedCodecError suggesting webm/mkv (VP8) or mkv/ts (MP2).
// Sample entries whose configuration the catalog lacks wait for the first
// frame that carries it (SPS/PPS of Annex B H.264/H.265, the AV1 sequence
// header, the VP9 frame header, the AC-3/E-AC-3 and MP3 frame headers):
// meanwhile that track's frames are dropped and the other tracks' frames
// are buffered, for at most Options.HeaderWait (then the header is written
// without the tracks still waiting). Parameter sets that change after the
// header are kept in band on keyframes.
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
