// Package mediatest is the test support shared by the muxer test suites
// (mux/flv, mux/mkv, mux/ts): feeding the embedded samples to a mux.Muxer
// the way the export engine does, and checking the output with the real
// tools (ffmpeg, ffprobe, mkvtoolnix).
//
// What it owns:
//
//   - Samples as muxer input: LoadSample (with the "-annexb" names for
//     the browser form), TrackOf, FramesOf, InputOf, SampleInput,
//     Input.Shift, Tracks.
//   - Feeding a muxer: Interleave, the order in which the jitter buffer
//     hands frames on (see its doc); Write and Feed, which fail the test
//     at the first error; CreateFile, a file to mux into; BenchMux and
//     MeanPayload, the benchmark loop.
//   - The tools: RequireTools (skips with a message when a tool is
//     missing; CI installs them, so the skip is never the normal path),
//     SystemFFmpeg, NewFFmpeg (the newer ffmpeg of scripts/ffmpeg-testing.sh
//     that reads Enhanced FLV), Run, DecodeClean, DecodeAtFileTimes (at the
//     file's own times, for timelines that jump), and Probe, which returns
//     ffprobe's streams, packets and format as typed structs
//     (ProbeResult). Each has a Tools method form for a given ffmpeg.
//   - GoroutinesIn: the goroutines running in given functions, for tests
//     of what holds no goroutine.
//   - CopyTracks: a broadcast's tracks copied into another, each payload
//     given by the test (the demo with malformed, withheld or corrupted
//     frames).
//
// What it does not own: each container's own checks (FLV tag parsing,
// Matroska DocType and Cues, MPEG-TS PIDs, PCR and continuity) stay in
// that muxer's tests.
//
// It imports testing and is for _test.go files only; a test in this
// package fails if non-test code imports it.
package mediatest
