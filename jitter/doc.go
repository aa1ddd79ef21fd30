// Package jitter merges the frames of several tracks into one stream in
// non-decreasing timestamp order, holding output back for a lagging track for
// at most a bounded delay.
//
// # Order
//
// Each track's frames keep their decode order. Across tracks, frames leave
// ordered by an order key: the frame's presentation timestamp, raised to the
// key of the track's previous frame when it is lower (a B-frame leaves right
// after the reference frame that precedes it in decode order). Ties go to the
// lower track ID. A Buffer releases the frame with the smallest key once no
// track can still produce a smaller one: every live track either has a frame
// buffered or has already delivered a frame with a key at least as large.
//
// # Bounded delay
//
// A track with nothing buffered holds the output back. It stops doing so,
// and is declared idle, when either bound is reached:
//
//   - media time: the newest key pushed on any track is Delay ahead of the
//     frame that waits. This is the normal bound: it depends only on the
//     media, so a recording is the same however the network scheduled it.
//   - wall time: the output has not moved for Delay of wall-clock time. This
//     covers the case where no data flows at all (every track stalls), where
//     media time stands still and would hold frames forever.
//
// An idle track holds nothing back until it delivers a frame again. A track
// whose data has arrived but was not pushed yet (Options.Pending) is not
// lagging and is never declared idle: a reader that drains one track's
// backlog before another's must not make the second one late.
//
// # Late frames
//
// A frame whose key is below the key already released (it comes from a track
// that was declared idle) is late. LateDrop, the default, drops it and counts
// it; on a video track the frames that depend on it are dropped too, up to
// the next keyframe, so decoders never see a broken reference chain.
// LatePass releases it at once with its own timestamp, counted, so the
// muxer sees a timestamp lower than one it already wrote. Late frames are
// never moved into the past of the output silently.
//
// # Growing delay
//
// With Options.MaxDelay above Delay, the delay grows (up to MaxDelay, and
// stays grown) for a track that lags but is not silent:
//
//   - when the media-time bound is reached for a track that pushed a frame
//     within the current delay of wall time, the delay grows to its lag (the
//     newest key pushed minus its newest key) plus Delay instead of the
//     track being declared idle: a track that falls behind little by
//     little (a link that queues the bigger video frames) loses nothing;
//   - a late frame grows the delay to the lag it showed plus Delay and the
//     track is waited for again: it loses one stretch (up to the keyframe
//     after it caught up), not everything after it.
//
// Frames dropped while a video track waits for its next keyframe still
// count as the track delivering. The delay does not grow for a silent
// track (nothing pushed for the current delay of wall time). A track that
// went quiet with every other track (a silence of them all of the delay
// or more: a network outage the connection survived) counts its silence
// from the first push after it: the frames the outage held back land in a
// burst, one track's before another's, and the one that comes second
// lags, it is not silent.
//
// With MediaTimeOnly as well (a file), a track that has started is never
// declared idle before the newest key pushed is MaxDelay ahead of the
// frame it holds back, silent or not: wall time tells a track whose frames
// will not come from one whose frames are late on their way (a loaded
// recorder reads the audio, a stream per frame, a second behind the
// video), and what comes within MaxDelay leaves in order. A silent track
// (the delay did not grow for it) is then declared idle, having held the
// others back by MaxDelay of media time once.
//
// # Discontinuities
//
// PushDiscontinuity marks a break in one track's timeline (a marker group,
// publisher rewind, reconnect). If the track's next frame would go back in
// time (a restarted publisher starts its clock afresh), the track is shifted
// forward so it continues one frame duration after the newest key seen on
// any track, never at a time already written. The other tracks of the
// broadcast rewind with it: when their own discontinuity lands within 10 s
// of the same new time they take the same shift, so audio and video stay in
// sync across the restart. The new timeline starts with its earliest frame
// whichever track brings it first (video from its keyframe after audio from
// its newest group): while none of it has left, the shift moves to make
// room. Only a frame that the shared shift would put before its track's last
// one, once the new timeline started leaving, is dropped (counted late). A forward gap is kept as
// it is. Either way the frame leaves with mux.Frame.Discontinuity set, which
// the muxer acts on.
//
// # Ends
//
// PushEnd queues where a track's newest frame ends (hang's end marker)
// right behind that frame: it leaves as an Item with End after the frame,
// in order, even when the frame left already, so the engine hands it to
// the muxer before the track's next frame. A frame still buffered when its
// end comes leaves with that duration in mux.Frame.Duration as well.
package jitter
