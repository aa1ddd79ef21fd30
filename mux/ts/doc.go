// Package ts writes MPEG-TS (ISO/IEC 13818-1) for the export engine: a
// streaming, single-program transport stream on an io.Writer, implementing
// mux.Muxer. The output is complete after every WriteFrame (MPEG-TS has no
// header to rewrite and no trailer), so it can be piped to a player or cut
// at any point.
//
// What the package owns:
//
//   - The elementary stream mapping: H.264 (stream type 0x1B) and H.265
//     (0x24) as Annex B with an access unit delimiter on every access unit
//     and the current VPS/SPS/PPS before every keyframe, from either input
//     form (AVCC with a description, or Annex B with in-band parameter
//     sets); AAC (0x0F) wrapped in ADTS; Opus as private data (0x06, PES id
//     0xBD) with the "Opus" registration descriptor, the DVB extension
//     descriptor 0x80 carrying the channel count and the Opus control header
//     before each packet, as ffmpeg reads it; AC-3 (0x81, "AC-3") and E-AC-3
//     (0x87, "EAC3") and MPEG-1/2 audio (0x03, 0x04 below 32 kHz) passed
//     through. AV1, VP8, VP9, FLAC and PCM are refused by AddTrack with a
//     *mux.UnsupportedCodecError suggesting mkv.
//   - The schedule: PAT/PMT first, before every video keyframe, after every
//     change of the track set (with a new PMT version) and at least every
//     500 ms; a PCR on the first video PID (audio-only: the first audio PID)
//     every 30 ms and never more than 40 ms apart, with PCR-only packets
//     filling gaps in the media;
//     random_access_indicator on keyframes; discontinuity_indicator after
//     a frame marked mux.Frame.Discontinuity.
//   - The timeline: 90 kHz PTS, and DTS for reordered video; by default
//     the earliest frame is presented at zero plus the first keyframe's
//     PTS-DTS reserve, with Options.KeepTimestamps the source timestamps
//     are kept. Values wrap at 33 bits.
//   - The start: nothing is written until every video track has a
//     keyframe; audio before that is dropped and counted in Stats().Dropped. A video
//     track that joins later, or that had a discontinuity, waits for its
//     next keyframe alone. After the start bound (10 s of media, 32 MiB
//     held) the output starts without the video tracks that have no
//     keyframe, and the audio from then on is written; those tracks stay
//     out of the PMT until their first keyframe (also when the output
//     starts at Close): a stream the PMT lists that carries nothing leaves
//     ffmpeg unable to decode the file.
//
// What comes from libraries: github.com/asticode/go-astits builds the
// PAT/PMT sections with their versions and CRCs (rebuilt only when the track
// set or the PCR PID changes, repeated otherwise);
// github.com/bluenviron/mediacommon/v2 parses the AudioSpecificConfig and
// OpusHead, lays out the ADTS header and the Opus control header;
// internal/codec/h26x (on mediacommon) splits and normalizes H.264/H.265 and
// estimates DTS from the slice headers.
//
// What is written here and why: the packetization of the media (packet.go:
// PES headers, 188-byte packets, adaptation fields with stuffing, PCR and
// flags, continuity counters), because astits writes every packet bit by
// bit through astikit.BitsWriter, handing the output one byte at a time,
// and allocates a stuffing adaptation field per frame; that cost about 2 µs
// and 2 allocations per frame, about ten times the rest of the muxer, and
// made the export slower than ffmpeg -c copy. The layout is astits' own, checked
// against it packet for packet in the tests. Also here: the table and PCR
// schedule (astits only retransmits tables every N PES and never writes a
// PCR on its own), the PCR-only packets that fill gaps in the media, and
// the patch of the ADTS frame_length field into a header mediacommon built
// once per track, which avoids an allocation per frame. mediacommon's own
// mpegts.Writer is not used: it cannot add or remove tracks mid-stream, set
// discontinuity_indicator or place PCRs on a time grid.
package ts
