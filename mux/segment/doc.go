// Package segment cuts one muxed stream into consecutive outputs: a
// [Muxer] wraps the muxer of the current output and, at the first video
// keyframe (any keyframe when there is no video track) at or after each
// multiple of a set length of media time, closes it and continues in the
// next one, which gets every track that is still added.
//
// The targets are cumulative from the first frame, as ffmpeg's segment
// muxer counts them: a cut that comes late (a keyframe after the target)
// does not push the later ones back, and a keyframe up to a millisecond
// short of its target still cuts (microsecond timestamps rounded from a
// 30 fps clock put the keyframe of a whole second a microsecond early), so
// 2 s segments of a stream with a keyframe every second are 2 s each. When
// the end of the run is known (Options.End), no output is started for the
// last frames: the last file is never shorter than half a segment.
//
// With Options.SplitForLateTracks a track that the current output cannot
// add any more (mux.ErrLateTrack: FLV or MP4 after their header) does not
// get lost: the next keyframe that may cut starts the next output with
// the new track set, and the late track's frames before it are dropped
// (and counted), since no output could hold them.
//
// It owns only the rotation: when to cut, and carrying the track set over.
// The containers are the wrapped muxers' (mux/flv, mux/mkv, mux/ts), and
// naming the outputs is the caller's (Options.Next).
package segment
