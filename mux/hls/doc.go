// Package hls records every rendition of a broadcast into one CMAF
// package that HLS and DASH players read, while it is being recorded and
// after: Writer is a mux.Muxer that writes named files through a Store (a
// directory, an object store) instead of one io.Writer.
//
// # What it owns
//
// The package layout, where segments are cut, the playlists, the DASH
// manifest and the package state that lets a restarted recording continue
// the package. The CMAF itself (init segments, moof+mdat fragments, the
// sample entries of every codec) comes from mux/mp4's fragment writer, one
// per rendition, which the Writer cuts with mp4.Writer.BreakFragment.
//
// # Layout
//
// With the default names (Options.Playlist "index.m3u8"), over a Store
// whose files can grow (RangeStore: DirStore, a directory):
//
//	index.m3u8          multivariant playlist
//	index.mpd           DASH manifest over the same segments
//	index.state.json    what a restart reads to continue the package
//	v0.m3u8 v0.mp4      video rendition 0 (v1, ... the others): one media
//	                    file, its init segment then its segments, each
//	                    named by byte range (EXT-X-MAP with BYTERANGE,
//	                    EXT-X-BYTERANGE; a DASH SegmentList of mediaRange)
//	a0.m3u8 a0.mp4      audio rendition 0
//	s0.m3u8 s0-00001.vtt ...               subtitles 0 (WebVTT; a text/vtt
//	                                       AdaptationSet of the MPD too)
//
// Over a Store that writes whole files only (an object store, whose
// objects cannot be appended to), or with Options.SegmentFiles, each
// segment is a file of its own: v0-init.mp4, v0-00001.m4s, ... (a DASH
// SegmentTemplate). Byte ranges are the default where they can be: two
// files per rendition instead of one per segment, which is what a file
// system charges for (creating a file costs ext4 about as much as all the
// rest of a segment's packaging) and what CDNs cache well; a rendition's
// media file is also a fragmented MP4 that plays on its own. A continued
// package keeps each rendition's layout.
//
// File names never come from the network: renditions are numbered by kind
// in the order the catalog lists them (a restart maps them back by their
// catalog name, from the state).
//
// # Segments
//
// The leading rendition (the first video, else the first audio) cuts a
// segment at its first keyframe at or after Options.SegmentDuration
// (default 4 s) of media; every other rendition cuts at its first keyframe
// (audio: its first frame) at or after that boundary, so segment n covers
// the same time in every rendition when the publisher's keyframes align
// (simulcast encoders usually do), and variants switch cleanly.
// EXT-X-TARGETDURATION is the longest segment rounded, at least the target:
// a publisher whose GOPs are longer than the target gets longer segments,
// and the playlist says so.
//
// # While recording, and after
//
// A segment is written once its successor's first frame arrives (or at
// Close), appended to its rendition's media file or as a whole file,
// then its rendition's media playlist; once every
// rendition has its segment of that boundary, the DASH manifest, the
// multivariant playlist (when what it says changed) and, every few
// boundaries or when it holds something new, the package state: through a
// Store whose writes are atomic (DirStore: the manifests of a boundary
// swapped in together, one directory exchange, as a BatchStore; an object
// store: one PUT; DirStore, a PatchStore, also takes the MPD's and the
// media playlists' new lines as the bytes that changed, the MPD being
// written with room after each list that grows), a player or CDN
// reading the package live never sees a playlist naming a segment that is
// not complete. A segment, which no playlist names before it is whole, is
// written in place where the Store can (NewFileStore). Media playlists
// are EXT-X-PLAYLIST-TYPE:EVENT and the MPD is dynamic while recording; Close writes the last segments and
// turns them into a VOD (EXT-X-ENDLIST, a static MPD). The multivariant
// playlist appears once every rendition has a segment; its BANDWIDTH is
// the largest segment bitrate of the variant's video plus that of its
// audio group, AVERAGE-BANDWIDTH their averages, both measured from the
// segments written, and it is rewritten as they change.
// EXT-X-PROGRAM-DATE-TIME maps the first segment of each run (and each
// segment after a discontinuity) to Options.Start, the wall clock of the
// first frame.
//
// # Breaks and restarts
//
// A discontinuity of the timeline (an outage, a publisher restart: the
// engine's mux.Frame.Discontinuity) ends every rendition's segment at the
// next boundary, which the leader places at its first keyframe after the
// break; the segments after it carry EXT-X-DISCONTINUITY and a new
// EXT-X-PROGRAM-DATE-TIME, and the MPD starts a new Period. A follower's
// frames between its own break and that boundary are dropped (counted in
// Stats), so no segment spans the gap.
//
// A killed recording leaves a package that plays up to its last complete
// segment: no playlist names a byte before it is written. A media file
// may hold more (part of a segment being appended when the process was
// killed): the Writer that continues the package cuts it back to the end
// of the last segment its playlist names before it appends. The state is written after the
// playlists, at the first boundary, when it holds a new rendition, init
// segment or chapter, and every 32 boundaries; segments a playlist names
// beyond it are taken from the playlists when the package is continued,
// never written again. A Writer over a Store that holds
// a package (its state file) continues it: segment numbers go on, the
// first new segment of each rendition is a discontinuity, and an init
// segment is written again (appended to v0.mp4, or v0-init-2.mp4; its
// own EXT-X-MAP) only when the configuration changed. A run that joined
// the broadcast the package was recorded from again (its state says
// where the package's timeline is on the broadcast's, and on the wall
// clock: rejoin.go) keeps the broadcast's times on the package's
// timeline and drops what the package holds, up to the leader's first
// keyframe after the package's end; any other run goes on 100 ms after
// the earlier media.
//
// # Codecs
//
// H.264 (avc1), H.265 (hvc1), AV1, VP9, AAC, Opus, FLAC, AC-3 and E-AC-3,
// in CMAF as mux/mp4 writes them; the CODECS strings come from gohlslib's
// codecparams over the init segment read back with mediacommon. VP8, MP3,
// MP2 and PCM are refused by Supports (HLS and browsers' MSE do not take
// them in fMP4). Tracks can be added until the first frame; a later one is
// refused with mux.ErrLateTrack.
//
// # Timestamps
//
// A segment's last sample, where no next frame gives its duration (before
// a discontinuity, at the end), lasts until the end its publisher said
// (mux.FrameEnder, hang's end marker), as in mux/mp4, else one frame; so
// does the segment in the playlists and the MPD.
//
// Every rendition is rebased onto one package timeline (the first frame at
// 0, or the end of the earlier runs): CMAF segments of different
// renditions of one time carry the same decode times. H.264/H.265 with
// B-frames get mux/mp4's decode times, which start at the rendition's
// first presentation time (h26x.DTS gives a first keyframe its
// presentation time): no decode delay and no edit list, as ffmpeg's own
// HLS muxer starts them at 0. That is what players need. hls.js maps the
// first fragment's decode time (tfdt) to the playlist's start, and
// Chromium's Media Source applies an init segment's edit list as well, so
// the 100 ms delay and edit list written before played the video (and
// the audio, which hls.js maps alike) a tenth of a second early: the
// first group of pictures fell before 0 and was never shown, and a last
// segment shorter than that was never reached, so the player never ended.
// Where mux/mp4 still writes a delay (a first frame whose decode time
// h26x.DTS could only estimate), its first decode time is still the first
// presentation time and the edit list takes the delay off; the MPD's
// presentationTimeOffset and timeline are the package's times, without
// the delay, because Chromium takes it off (dash.js would otherwise take
// it off twice), and subtitles' X-TIMESTAMP-MAP maps MPEGTS 0 to 0.
//
// # What comes from libraries and what is written here
//
// gohlslib's pkg/playlist writes the multivariant playlist (its Muxer is
// a live sliding-window server that deletes segments, not a recorder) and
// pkg/codecparams the CODECS strings; Eyevinn's dash-mpd types hold the
// MPD. Written here: where to cut, the package state and the restart; the
// media playlists and the MPD's XML, by plain byte writers, because
// rendering every segment again at every boundary (gohlslib's Media) and
// marshalling the MPD by reflection (dash-mpd) were most of what a
// package cost over an MP4 file, and grew with the recording (tests hold
// both to those libraries' renderings of the same documents); and an
// EXT-X-MAP that changes after a restart, which gohlslib's Media cannot
// say. No Go DASH packager exists.
package hls
