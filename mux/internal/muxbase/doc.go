// Package muxbase is the bookkeeping every container writer in mux/ does
// the same way, so that each muxer package keeps only its format: Output,
// the io.Writer with the count of bytes written and the first error, which
// sticks (after a failed write nothing more is written, and every call
// returns that error); Output.Usable and UnknownTrack, what WriteFrame,
// AddTrack and RemoveTrack check first; and Held, the frames a muxer whose
// header waits for a track's codec configuration (MKV, MP4) holds
// meanwhile, bounded by their time span and their bytes; and FrameGrid,
// where a muxer with a millisecond timeline (FLV, MKV) puts each video
// frame so that a reader's 1/framerate grid gives it its own tick.
package muxbase
