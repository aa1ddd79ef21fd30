// Package segment cuts one muxed stream into consecutive outputs: a
// [Muxer] wraps the muxer of the current output and, at the first video
// keyframe (any keyframe when there is no video track) after a set length
// of media time, closes it and continues in the next one, which gets every
// track that is still added.
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
