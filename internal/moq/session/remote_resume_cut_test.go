package session

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/model"
)

// resumeHost is the RemoteHost of a resume test: a log to read and a count
// of the groups lost.
type resumeHost struct {
	ctx  context.Context
	mu   sync.Mutex
	log  bytes.Buffer
	lost atomic.Uint64
	wg   sync.WaitGroup
}

func (h *resumeHost) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.Write(p)
}

func (h *resumeHost) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log.String()
}

func (h *resumeHost) Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(h, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
func (h *resumeHost) Config() *RemoteConfig {
	return &RemoteConfig{RequestTimeout: 5 * time.Second, ReconnectMin: time.Millisecond, ReconnectMax: time.Millisecond}
}
func (h *resumeHost) Context() context.Context   { return h.ctx }
func (h *resumeHost) Activated() <-chan struct{} { return nil }
func (h *resumeHost) PendingStreams() int        { return 0 }
func (h *resumeHost) AddLost(n uint64)           { h.lost.Add(n) }
func (h *resumeHost) Go(f func())                { h.wg.Go(f) }
func (h *resumeHost) WaitConn(context.Context, uint64) (Family, uint64, error) {
	return nil, 0, context.Canceled
}

// servingFamily is a connection whose publisher serves FETCH from groups,
// the loc payloads of each group's frames (moq-lite: one group a FETCH,
// frame ranges where frameRanges says so).
type servingFamily struct {
	Family      // what a resume does not use
	ctx         context.Context
	frameRanges bool
	groups      map[uint64][]hang.Object
}

func (f *servingFamily) Context() context.Context { return f.ctx }
func (f *servingFamily) Cause() error             { return nil }
func (f *servingFamily) Gone(error) bool          { return false }
func (f *servingFamily) Silence() time.Duration   { return time.Second }
func (f *servingFamily) Loss(err error) error     { return err }
func (f *servingFamily) FrameRanges() bool        { return f.frameRanges }
func (f *servingFamily) GroupRanges() bool        { return false }
func (f *servingFamily) Fetches() bool            { return true }
func (f *servingFamily) SpanSubscribes() bool     { return false }
func (f *servingFamily) VersionName() string      { return "fake" }

func (f *servingFamily) OpenFetch(_ context.Context, _ *Remote, _ uint64, r FetchRange, what string) (FetchReply, error) {
	objs, ok := f.groups[r.Group]
	to := uint64(len(objs))
	if r.HasTo {
		to = min(to, r.To+1)
	}
	if !ok || r.From >= to {
		return nil, fmt.Errorf("%w: %s: not held", ErrNoFetch, what)
	}
	return &servedReply{group: r.Group, objs: objs[r.From:to]}, nil
}

// servedReply hands over one group's objects, then io.EOF.
type servedReply struct {
	group uint64
	objs  []hang.Object
}

func (r *servedReply) Next() (hang.Object, uint64, bool, error) {
	if len(r.objs) == 0 {
		return hang.Object{}, 0, false, io.EOF
	}
	o := r.objs[0]
	r.objs = r.objs[1:]
	return o, r.group, false, nil
}
func (r *servedReply) Interrupt()      {}
func (r *servedReply) End(error, bool) {}

// TestAResumeAfterALossThatCutTheLiveGroupBeforeItsFirstFrameFillsTheGap:
// a publisher restarted (a new timeline from group 0), the recorder read
// groups 0-10 of it and the header of group 11, and the network dropped
// before group 11's first frame came (a blackhole in the middle of a
// keyframe). The track keeps one group, so group 10 is gone once read:
// the newest group it holds has no frame to compare with the publisher's.
// The publisher is the same (its live group is now 46), so the resume
// completes group 11 and fetches 12-45: no new timeline, nothing lost.
// (Soak 3, 536.5 s: the loc video of mkv/lite lost 35 s, the whole
// blackhole, to "resumed on a new timeline ... last=11 first=46".)
func TestAResumeAfterALossThatCutTheLiveGroupBeforeItsFirstFrameFillsTheGap(t *testing.T) {
	for _, tc := range []struct {
		name        string
		frameRanges bool
	}{
		{"moq-lite-06", true},
		{"moq-lite-05", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			const perGroup = 3
			frame := func(seq uint64, i int) model.Frame {
				return model.Frame{Timestamp: int64(seq)*1_000_000 + int64(i)*33_333, Payload: fmt.Appendf(nil, "g%d-f%d", seq, i)}
			}
			fam := &servingFamily{ctx: ctx, frameRanges: tc.frameRanges, groups: map[uint64][]hang.Object{}}
			for seq := range uint64(47) {
				for i := range perGroup {
					f := frame(seq, i)
					fam.groups[seq] = append(fam.groups[seq], hang.Object{Payload: hang.AppendLOC(nil, f.Timestamp, f.Payload)})
				}
			}
			pack, err := hang.NewTrack(hang.LOC, nil)
			if err != nil {
				t.Fatal(err)
			}
			host := &resumeHost{ctx: ctx}
			defer host.wg.Wait()
			tr := model.NewTrack("h264")
			tr.SetKeepGroups(1) // as a recorder's track (subscribe)
			rt := &Remote{Host: host, Broadcast: "loc", Name: "h264", Track: tr, Pack: pack}
			c := tr.Subscribe(time.Hour)
			defer c.Close()
			read := func() (got []string, disc int) {
				for ev, ok := c.Next(); ok; ev, ok = c.Next() {
					switch ev.Kind {
					case model.EventFrame:
						got = append(got, string(ev.Frame.Payload))
					case model.EventDiscontinuity:
						disc++
					case model.EventEnd:
						t.Fatalf("track ended: %v", ev.Err)
					}
				}
				return got, disc
			}

			// The first publisher session's last group, then its restart.
			if err := InsertGroup(tr, 157, []model.Frame{frame(157, 0)}); err != nil {
				t.Fatal(err)
			}
			read()
			tr.Discontinuity()
			tr.SetStart(0)
			for seq := range uint64(11) {
				g, err := tr.CreateGroup(seq)
				if err != nil {
					t.Fatal(err)
				}
				for i := range perGroup {
					if err := g.WriteFrame(frame(seq, i)); err != nil {
						t.Fatal(err)
					}
				}
				g.Close(nil)
				read()
			}
			// Group 11's header, then the loss.
			cut, err := tr.CreateGroup(11)
			if err != nil {
				t.Fatal(err)
			}
			read()
			rt.interrupt(11, cut)
			rt.hold() // as a lost connection holds it
			if tr.Group(10) != nil {
				t.Fatal("the track still holds group 10: the case needs the newest group with a frame dropped")
			}

			rt.resume(ctx, fam, hang.Timescale, 46)
			rt.release()

			if log := host.String(); strings.Contains(log, "new timeline") {
				t.Fatalf("the same publisher taken for a restarted one:\n%s", log)
			}
			got, disc := read()
			var want []string
			for seq := uint64(11); seq < 46; seq++ {
				for i := range perGroup {
					want = append(want, string(frame(seq, i).Payload))
				}
			}
			if disc != 0 || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("after the resume: %d discontinuities, frames\n got %v\nwant %v\nlog:\n%s", disc, got, want, host.String())
			}
			if n := host.lost.Load(); n != 0 {
				t.Fatalf("%d groups counted lost", n)
			}
		})
	}
}
