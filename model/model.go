package model

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Frame is one encoded frame as a track carries it.
type Frame struct {
	// Timestamp is the presentation time in microseconds.
	Timestamp int64
	// Payload is the frame's bytes. Producers hand over ownership: neither
	// side modifies it after WriteFrame.
	Payload []byte
	// Sync says whether a decoder can start at the frame, when the
	// producer knows it from the bitstream. The zero value is hang's group
	// rule: the first frame of each group is the keyframe.
	Sync Sync
	// Marker says the frame is one of hang's empty-payload markers, not
	// media (its Payload is empty): opening its group, a discontinuity
	// (the timeline breaks before the next group); after frames of its
	// group, the exclusive end of the frame before it, at Timestamp. A
	// Consumer reports the first kind as EventDiscontinuity too; readers
	// that write media skip markers, relays pass them on.
	Marker bool
}

// Sync is what a producer knows about a frame's independence.
type Sync uint8

// Sync values.
const (
	// SyncGroup applies hang's rule: a keyframe exactly when the frame
	// opens its group (the legacy and loc containers carry no flag).
	SyncGroup Sync = iota
	// SyncKey marks a keyframe, wherever it sits in its group.
	SyncKey
	// SyncDelta marks a frame that depends on earlier ones, even when it
	// opens its group (a CMAF publisher that starts a group per fragment
	// and flags every sample as sync).
	SyncDelta
)

// Errors reported by the model. Test with errors.Is.
var (
	// ErrClosed means a write to a group, track or broadcast that was
	// already finished.
	ErrClosed = errors.New("model: closed")
	// ErrDuplicateGroup means a group sequence was created twice.
	ErrDuplicateGroup = errors.New("model: duplicate group")
	// ErrNotFound means a track is not (and cannot be made) available.
	ErrNotFound = errors.New("model: track not found")
)

// DefaultKeepGroups is how many of its newest groups a track keeps for
// consumers that join late.
const DefaultKeepGroups = 8

// MaxLag is how far, in media time, the track's newest frame may move on
// past a group (past the group's newest frame, or past the newest frame
// the track held when the group was created, whichever is later) while a
// consumer has not read the group, before the group is dropped all the
// same. A consumer that falls further behind loses the older groups (it
// skips to what is kept). It bounds the memory a stalled reader can hold.
//
// A group counts from when its readers could first take it: its creation,
// or for a group created while the track is held (Hold: a gap being
// filled after a reconnect, the minute an outage missed fetched in order
// while the readers wait), the Release. Such groups are as new to their
// readers as a live one: measured from their own frames, the oldest of a
// fill longer than MaxLag were dropped as the newer ones went in, before
// any reader could take them (about 4 s of video lost after every
// blackhole of over 15 s).
const MaxLag = 10 * time.Second

// Broadcast is a named set of tracks.
type Broadcast struct {
	name string

	mu      sync.Mutex
	tracks  map[string]*Track
	request func(name string) (*Track, error)
	onClose func(err error)
	// onSelected is told that a reader asked for every track it takes
	// from the catalog it read (Selected).
	onSelected func()
	// unpaced: the producer writes as fast as the readers read (SetUnpaced).
	unpaced atomic.Bool
	err     error
	ended   bool
	done    chan struct{}
	// firstWaits are the channels FirstFrame gave out for tracks not held
	// yet, by name.
	firstWaits map[string]chan struct{}
}

// NewBroadcast returns an empty, live broadcast.
func NewBroadcast(name string) *Broadcast {
	return &Broadcast{name: name, tracks: map[string]*Track{}, done: make(chan struct{})}
}

// Name returns the broadcast's path.
func (b *Broadcast) Name() string { return b.name }

// CreateTrack returns the producer side of track name, creating it when it
// does not exist yet.
func (b *Broadcast) CreateTrack(name string) *Track {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t, ok := b.tracks[name]; ok {
		return t
	}
	t := NewTrack(name)
	b.addTrackLocked(name, t)
	return t
}

// HandleRequests installs the function Track calls for a track the
// broadcast does not hold yet (package subscribe uses it to subscribe on
// demand). The function returns the track it started filling, or an error.
func (b *Broadcast) HandleRequests(fn func(name string) (*Track, error)) {
	b.mu.Lock()
	b.request = fn
	b.mu.Unlock()
}

// HandleSelected installs the function Selected calls. A producer that
// starts every track a reader asks for at one point (an archive's reader
// starts them at one keyframe) waits for it instead of for a quiet moment
// after the requests.
func (b *Broadcast) HandleSelected(fn func()) {
	b.mu.Lock()
	b.onSelected = fn
	b.mu.Unlock()
}

// Selected tells the producer that a reader asked (Track) for every track
// it takes from the catalog it just read. A later catalog may bring more.
func (b *Broadcast) Selected() {
	b.mu.Lock()
	fn := b.onSelected
	b.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// SetUnpaced says that the broadcast is written as fast as its readers
// read it (an archive read whole, not replayed in real time): a reader
// that ran out of frames gets the next ones within microseconds, not a
// frame interval, and may wait for them without giving up its thread
// (package export lingers before it parks).
func (b *Broadcast) SetUnpaced() { b.unpaced.Store(true) }

// Unpaced reports whether SetUnpaced was called.
func (b *Broadcast) Unpaced() bool { return b.unpaced.Load() }

// HandleClose installs the function Close calls, once, after the broadcast
// ended (package subscribe ends its subscriptions there, without a
// goroutine waiting on Done).
func (b *Broadcast) HandleClose(fn func(err error)) {
	b.mu.Lock()
	b.onClose = fn
	b.mu.Unlock()
}

// Track returns track name for reading: the one already held, or one the
// request handler provides. Without a handler, a track not held yet is
// created empty, for a producer in the same process to fill (CreateTrack
// returns it). After the broadcast ended, a track not held is ErrNotFound,
// with or without a handler: nothing would ever end it. A track the
// handler made while the broadcast ended is closed with it.
func (b *Broadcast) Track(name string) (*Track, error) {
	b.mu.Lock()
	if t, ok := b.tracks[name]; ok {
		b.mu.Unlock()
		return t, nil
	}
	if b.ended {
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q in broadcast %q", ErrNotFound, name, b.name)
	}
	fn := b.request
	if fn == nil {
		defer b.mu.Unlock()
		t := NewTrack(name)
		b.addTrackLocked(name, t)
		return t, nil
	}
	b.mu.Unlock()
	t, err := fn(name)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if existing, ok := b.tracks[name]; ok {
		b.mu.Unlock()
		return existing, nil
	}
	if b.ended {
		err := b.err
		b.mu.Unlock()
		t.Close(err)
		return nil, fmt.Errorf("%w: %q in broadcast %q", ErrNotFound, name, b.name)
	}
	b.addTrackLocked(name, t)
	b.mu.Unlock()
	return t, nil
}

// TrackNames lists the tracks held now, sorted.
func (b *Broadcast) TrackNames() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	names := make([]string, 0, len(b.tracks))
	for n := range b.tracks {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Close ends the broadcast and every track in it. err nil means a clean end.
func (b *Broadcast) Close(err error) {
	b.mu.Lock()
	if b.ended {
		b.mu.Unlock()
		return
	}
	b.ended, b.err = true, err
	tracks := make([]*Track, 0, len(b.tracks))
	for _, t := range b.tracks {
		tracks = append(tracks, t)
	}
	close(b.done)
	for _, c := range b.firstWaits {
		close(c) // FirstFrame of a track that never came
	}
	b.firstWaits = nil
	onClose := b.onClose
	b.mu.Unlock()
	for _, t := range tracks {
		t.Close(err)
	}
	if onClose != nil {
		onClose(err)
	}
}

// Done is closed when the broadcast ends.
func (b *Broadcast) Done() <-chan struct{} { return b.done }

// Err returns why the broadcast ended: nil while live or after a clean end.
func (b *Broadcast) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Track is a sequence of groups. Its methods are safe for concurrent use.
type Track struct {
	name string

	mu         sync.Mutex
	groups     []*Group // sorted by sequence, current epoch only
	epoch      uint64   // bumped by Discontinuity
	newestTS   int64    // highest timestamp written in this epoch
	floor      uint64   // groups below this sequence were dropped
	start      uint64   // first group of this epoch, when startSet
	startSet   bool
	nextSeq    uint64
	keepGroups int
	ended      bool
	err        error
	consumers  []*Consumer
	backfill   func(ctx context.Context, target int64) error
	holds      int         // see Hold
	lost       []lostRange // see MarkLost; current epoch only
	// groupFrames is how many frames the last group closed complete
	// held: the room a new group's frame list starts with.
	groupFrames int
	// releaseRead drops each frame's payload once every consumer read it
	// (SetReleaseRead).
	releaseRead bool
	// onDrained is called when a consumer read all there is
	// (HandleDrained).
	onDrained func()
	// readMark is the media time a ReadTo that reported false waits for
	// (readMarkSet): a consumer taking a frame at or after it calls
	// onDrained.
	readMark    int64
	readMarkSet bool
	// clock is the wall clock consumers time a stall with; nil means
	// time.Now (tests set it).
	clock func() time.Time
	// first is FirstFrame's channel (nil until asked for or closed),
	// firstDone whether it is closed; firstAlso are channels of
	// Broadcast.FirstFrame that close with it.
	first     chan struct{}
	firstDone bool
	firstAlso []chan struct{}
}

func (t *Track) now() time.Time {
	if t.clock != nil {
		return t.clock()
	}
	return time.Now()
}

// maxFrameHint bounds the frame list a group reserves ahead (40 KB).
const maxFrameHint = 1024

// NewTrack returns a live track with no groups.
func NewTrack(name string) *Track {
	return &Track{name: name, keepGroups: DefaultKeepGroups, newestTS: math.MinInt64}
}

// Name returns the track's name.
func (t *Track) Name() string { return t.name }

// SetKeepGroups sets how many of the newest groups the track keeps (at
// least 1).
func (t *Track) SetKeepGroups(n int) {
	t.mu.Lock()
	t.keepGroups = max(n, 1)
	t.mu.Unlock()
}

// SetReleaseRead makes the track let go of each frame's payload once every
// consumer has read it, keeping the frame's place and timestamps: for a
// track that only the consumers it has now will read (a recorder's), whose
// frames would otherwise stay in memory as long as the track keeps their
// group, the newest one at least, which a paused broadcast leaves open. A
// consumer that joins later starts after the frames let go, at the next
// keyframe. A producer or publisher that reads groups itself (Group.Frames)
// sees such frames with a nil payload.
func (t *Track) SetReleaseRead(on bool) {
	t.mu.Lock()
	t.releaseRead = on
	t.mu.Unlock()
}

// releaseLocked drops the payloads of g's frames that every consumer has
// read. Called with t.mu held.
func (t *Track) releaseLocked(g *Group) {
	upto := len(g.frames)
	for _, c := range t.consumers {
		if upto = min(upto, c.readIn(g)); upto <= g.released {
			return
		}
	}
	for i := g.released; i < upto; i++ {
		g.frames[i].Payload = nil
	}
	g.released = upto
}

// AppendGroup creates the group after the highest sequence seen so far.
func (t *Track) AppendGroup() (*Group, error) {
	t.mu.Lock()
	seq := t.nextSeq
	t.mu.Unlock()
	return t.CreateGroup(seq)
}

// CreateGroup creates group seq. Groups may be created in any order.
func (t *Track) CreateGroup(seq uint64) (*Group, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, fmt.Errorf("track %q: %w", t.name, ErrClosed)
	}
	i := sort.Search(len(t.groups), func(i int) bool { return t.groups[i].seq >= seq })
	if i < len(t.groups) && t.groups[i].seq == seq {
		return nil, fmt.Errorf("track %q group %d: %w", t.name, seq, ErrDuplicateGroup)
	}
	if t.startSet && seq < t.start {
		// An older group than the first one delivered: a backfill. Readers
		// that have not started begin with it.
		t.start = seq
	}
	for _, c := range t.consumers {
		if c.fresh && c.started && c.epoch == t.epoch && seq < c.cursor {
			// A reader of a new timeline that has delivered none of it
			// (it saw the restart, the caller holds it back while older
			// groups are fetched): it begins with this one too.
			c.cur, c.idx, c.cursor = nil, 0, seq
		}
	}
	g := &Group{track: t, seq: seq, epoch: t.epoch, bornTS: t.newestTS}
	if t.holds > 0 {
		g.bornTS = heldBorn // counts from the Release (MaxLag)
	}
	t.groups = append(t.groups, nil)
	copy(t.groups[i+1:], t.groups[i:])
	t.groups[i] = g
	if seq >= t.nextSeq {
		t.nextSeq = seq + 1
	}
	if seq+1 == t.floor {
		// A backfill adds, newest first, the groups just before the
		// oldest one kept: they are not dropped ones any more.
		t.floor = seq
	}
	t.pruneLocked()
	t.wakeLocked()
	return g, nil
}

// pruneLocked drops the oldest groups beyond the keepGroups newest, as long
// as every consumer has read past them or they lag the newest group by more
// than MaxLag. Called with t.mu held, when a group is created and when a
// consumer has read all there is.
func (t *Track) pruneLocked() {
	extra := len(t.groups) - t.keepGroups
	if extra <= 0 {
		return
	}
	next := uint64(math.MaxUint64) // the oldest group a consumer still needs
	for _, c := range t.consumers {
		if c.epoch != t.epoch || !c.started {
			next = 0 // it will start at the oldest group with a frame
			break
		}
		next = min(next, c.cursor)
	}
	newest, lag := t.newestTS, MaxLag.Microseconds()
	n := 0
	for n < extra {
		g := t.groups[n]
		if g.seq >= next && (g.media == 0 || newest-max(g.maxTS, g.bornTS) <= lag) {
			break
		}
		n++
	}
	if n > 0 {
		t.floor = max(t.floor, t.groups[n-1].seq+1)
		clear(t.groups[:n])
		t.groups = append(t.groups[:0], t.groups[n:]...)
	}
}

// SetStart tells the track which group its producer delivers first (for a
// subscription, the group SUBSCRIBE_OK names). Group streams can arrive in
// any order; a consumer that has not started yet then begins at seq and
// waits for it, within its latency, instead of starting at whichever group
// arrived first. It applies until the next Discontinuity.
func (t *Track) SetStart(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.start, t.startSet = seq, true
	t.wakeLocked()
}

// Discontinuity tells consumers that the track's timeline and group
// sequence restart (a reconnect or a publisher restart): consumers drop their
// cursor, report a discontinuity, and read from the first group created
// after this call.
func (t *Track) Discontinuity() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.epoch++
	t.newestTS, t.floor, t.startSet = math.MinInt64, 0, false
	t.lost = nil
	clear(t.groups)
	t.groups = t.groups[:0]
	t.nextSeq = 0
	t.wakeLocked()
}

// Close ends the track. err nil means a clean end; otherwise consumers see
// err after the frames they can still read.
func (t *Track) Close(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return
	}
	t.ended, t.err = true, err
	t.firstFrameLocked()
	// Groups still open end with the track: their streams cannot deliver
	// any more.
	for _, g := range t.groups {
		if !g.finished {
			g.finished, g.err = true, err
		}
	}
	t.wakeLocked()
}

// wakeLocked marks every consumer of the track ready. Called with t.mu held.
func (t *Track) wakeLocked() {
	for _, c := range t.consumers {
		c.wake()
	}
}

// Subscribe returns a consumer that reads the track from its oldest
// buffered group that has a frame, skipping a stalled group once newer
// groups run latency past its newest frame and have for latency of wall
// time (0: as soon as a newer group has data). The wall time is counted
// from when the reader first finds the newer data that far ahead, and
// the skip happens on a later Next: a live track's next change wakes the
// reader.
func (t *Track) Subscribe(latency time.Duration) *Consumer {
	c := &Consumer{track: t, latency: latency.Microseconds(), liveEdge: minTimestamp, needKey: true}
	t.mu.Lock()
	c.epoch = t.epoch
	t.consumers = append(t.consumers, c)
	t.mu.Unlock()
	return c
}

func (t *Track) unsubscribe(c *Consumer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, x := range t.consumers {
		if x == c {
			t.consumers = slices.Delete(t.consumers, i, i+1) // clears the freed slot
			return
		}
	}
}

// Group is one run of frames that starts with a keyframe.
type Group struct {
	track *Track
	seq   uint64
	epoch uint64

	// Guarded by track.mu.
	frames   []Frame
	first    [1]Frame // frames' storage while it holds one (an audio group)
	released int      // frames before this one have no payload (SetReleaseRead)
	minTS    int64
	maxTS    int64
	bornTS   int64 // the track's newestTS when readers could first take the group, or heldBorn (MaxLag)
	// media counts the frames that are not markers. An int32 beside
	// finished: the two share a word, and a Group stays in the 144-byte
	// size class (an audio track allocates one per frame).
	media    int32
	finished bool
	err      error
}

// Sequence returns the group's sequence number.
func (g *Group) Sequence() uint64 { return g.seq }

// WriteFrame appends a frame to the group.
func (g *Group) WriteFrame(f Frame) error {
	t := g.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if g.finished {
		return fmt.Errorf("track %q group %d: %w", t.name, g.seq, ErrClosed)
	}
	g.appendLocked(f)
	t.wakeLocked()
	return nil
}

// WriteFrames appends frames in order, as WriteFrame each would, waking the
// consumers once: a producer that has many at once (an archive replayed as
// fast as it is read) hands them over as one change, which a reader takes
// in one turn.
func (g *Group) WriteFrames(fs []Frame) error {
	if len(fs) == 0 {
		return nil
	}
	t := g.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if g.finished {
		return fmt.Errorf("track %q group %d: %w", t.name, g.seq, ErrClosed)
	}
	if g.frames == nil && t.groupFrames < len(fs) {
		g.frames = make([]Frame, 0, len(fs))
	}
	for _, f := range fs {
		g.appendLocked(f)
	}
	t.wakeLocked()
	return nil
}

// appendLocked appends f to the group. Called with the track's lock held.
func (g *Group) appendLocked(f Frame) {
	t := g.track
	if f.Marker {
		// A marker's time is no media time: it moves no bound.
	} else if g.media == 0 {
		g.minTS, g.maxTS = f.Timestamp, f.Timestamp
	} else {
		g.minTS, g.maxTS = min(g.minTS, f.Timestamp), max(g.maxTS, f.Timestamp)
	}
	if g.frames == nil {
		// As many as the last group had: one allocation per group
		// instead of one per doubling, none for a group of one frame.
		if t.groupFrames <= 1 {
			g.frames = g.first[:0]
		} else {
			g.frames = make([]Frame, 0, t.groupFrames)
		}
	}
	g.frames = append(g.frames, f)
	if !f.Marker {
		g.media++
		t.newestTS = max(t.newestTS, f.Timestamp)
		if !t.firstDone && !g.frames[0].Marker {
			t.firstFrameLocked()
		}
	}
}

// Close finishes the group. err nil means complete (a FIN); otherwise the
// group was truncated (a reset) and consumers move on to the next group.
func (g *Group) Close(err error) {
	t := g.track
	t.mu.Lock()
	defer t.mu.Unlock()
	if g.finished {
		return
	}
	g.finished, g.err = true, err
	if err == nil {
		t.groupFrames = min(len(g.frames), maxFrameHint)
	}
	t.wakeLocked()
}

// Consumers returns how many consumers read the track now (a publisher's
// subscribers, a recorder's engine).
func (t *Track) Consumers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.consumers)
}
