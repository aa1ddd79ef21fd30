package session

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/hang"
)

// scriptedReply plays a FETCH reply from a list of steps and records how
// the core ended it.
type scriptedReply struct {
	steps []replyStep
	// block, when set, makes Next wait for Interrupt once the steps are
	// used up.
	block       chan struct{}
	ended       bool
	endErr      error
	endBad      bool
	interrupted bool
}

type replyStep struct {
	obj   hang.Object
	group uint64
	skip  bool
	err   error
}

func (r *scriptedReply) Next() (hang.Object, uint64, bool, error) {
	if len(r.steps) == 0 {
		if r.block != nil {
			<-r.block
			return hang.Object{}, 0, false, errors.New("read interrupted")
		}
		return hang.Object{}, 0, false, io.EOF
	}
	s := r.steps[0]
	r.steps = r.steps[1:]
	return s.obj, s.group, s.skip, s.err
}

func (r *scriptedReply) Interrupt() {
	r.interrupted = true
	if r.block != nil {
		close(r.block)
	}
}

func (r *scriptedReply) End(err error, bad bool) { r.ended, r.endErr, r.endBad = true, err, bad }

func legacyDecoder(t *testing.T) *hang.Decoder {
	t.Helper()
	tr, err := hang.NewTrack(hang.Legacy, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec := tr.Decoder()
	t.Cleanup(dec.Close)
	return &dec
}

func TestAFetchReplyBecomesTheFramesOfItsGroupOrSaysWhyNot(t *testing.T) {
	withdrawn := errors.New("reset by the peer")
	for _, tc := range []struct {
		name    string
		steps   []replyStep
		frames  string // payloads, comma-separated
		wantErr error  // errors.Is; nil: frames
		bad     bool   // the reply is ended as a bad stream
	}{
		{name: "a reply read to its end gives its frames, skipping what is not of the group",
			steps: []replyStep{{obj: legacyObject(0, "a")}, {skip: true}, {obj: legacyObject(1000, "b")}}, frames: "a,b"},
		{name: "a reply without frames is a group not available",
			steps: []replyStep{{skip: true}}, wantErr: ErrNoFetch},
		{name: "a reply the peer withdrew is a group not available",
			steps: []replyStep{{obj: legacyObject(0, "a")}, {err: errors.Join(ErrNoFetch, withdrawn)}}, wantErr: withdrawn},
		{name: "a payload that is not what the catalog says is the decoder's error",
			steps: []replyStep{{obj: hang.Object{Payload: []byte{0x80}}}}, wantErr: hang.ErrMalformed, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptedReply{steps: tc.steps}
			frames, err := Fetch(context.Background(), r, legacyDecoder(t), "FETCH b/video group 3")
			if !r.ended || r.endBad != tc.bad {
				t.Fatalf("reply ended %v (bad %v), want ended (bad %v)", r.ended, r.endBad, tc.bad)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || frames != nil || !strings.Contains(err.Error(), "group 3") {
					t.Fatalf("got %d frames, %v; want none and %v naming the request", len(frames), err, tc.wantErr)
				}
				if tc.wantErr == withdrawn && !errors.Is(err, ErrNoFetch) {
					t.Fatalf("%v: a withdrawn reply must stay ErrNoFetch", err)
				}
				return
			}
			if err != nil || r.endErr != nil {
				t.Fatalf("fetch: %v (ended with %v)", err, r.endErr)
			}
			var got []string
			for _, f := range frames {
				got = append(got, string(f.Payload))
			}
			if strings.Join(got, ",") != tc.frames {
				t.Fatalf("frames %q, want %s", got, tc.frames)
			}
		})
	}
}

func TestAFetchWhoseContextEndsIsInterruptedAndReturnsTheCause(t *testing.T) {
	cause := errors.New("the backfill's budget ran out")
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &scriptedReply{steps: []replyStep{{obj: legacyObject(0, "a")}}, block: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := Fetch(ctx, r, legacyDecoder(t), "FETCH b/video group 3")
		done <- err
	}()
	cancel(cause)
	if err := <-done; !errors.Is(err, cause) {
		t.Fatalf("fetch: %v, want the context's cause", err)
	}
	if !r.interrupted || !r.ended || r.endErr == nil {
		t.Fatalf("interrupted %v, ended %v with %v: want the read woken and the reply ended with its error", r.interrupted, r.ended, r.endErr)
	}
}

// TestARangedFetchReplySplitsIntoItsGroups: the reply to a FETCH of groups
// 5-8 is read into one result per group, each decoded on its own; a group
// the reply did not carry is not available, and a reply that broke keeps
// the groups before the one it broke in.
func TestARangedFetchReplySplitsIntoItsGroups(t *testing.T) {
	withdrawn := errors.New("reset by the peer")
	obj := func(group uint64, ts int64, payload string) replyStep {
		return replyStep{obj: legacyObject(ts, payload), group: group}
	}
	for _, tc := range []struct {
		name  string
		steps []replyStep
		want  string // per group: payloads, or "-" for an error wrapping err (nil: any)
		err   error
	}{
		{name: "every group asked, other groups and status objects skipped",
			steps: []replyStep{obj(5, 0, "a"), obj(5, 1, "b"), {group: 5, skip: true}, obj(6, 2, "c"), obj(9, 9, "x"), obj(7, 3, "d"), obj(8, 4, "e")},
			want:  "a,b|c|d|e"},
		{name: "a group the publisher no longer holds is not available, the others are",
			steps: []replyStep{obj(5, 0, "a"), obj(7, 3, "d"), obj(8, 4, "e")},
			want:  "a|-|d|e", err: ErrNoFetch},
		{name: "a reply cut in group 7 keeps groups 5 and 6",
			steps: []replyStep{obj(5, 0, "a"), obj(6, 2, "c"), obj(7, 3, "d"), {err: errors.Join(ErrNoFetch, withdrawn)}},
			want:  "a|c|-|-", err: withdrawn},
		{name: "groups out of ascending order break the reply there",
			steps: []replyStep{obj(5, 0, "a"), obj(7, 3, "d"), obj(6, 2, "c"), obj(8, 4, "e")},
			want:  "a|-|-|-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &scriptedReply{steps: tc.steps}
			tr, err := hang.NewTrack(hang.Legacy, nil)
			if err != nil {
				t.Fatal(err)
			}
			decoders := 0
			res := FetchGroups(context.Background(), r, func() hang.Decoder { decoders++; return tr.Decoder() }, 5, 4, "FETCH b/audio groups 5-8")
			if !r.ended {
				t.Fatal("the reply was not ended")
			}
			var got []string
			for i, f := range res {
				if f.Err != nil {
					if tc.err != nil && !errors.Is(f.Err, tc.err) {
						t.Fatalf("group %d: %v, want %v", 5+i, f.Err, tc.err)
					}
					got = append(got, "-")
					continue
				}
				var p []string
				for _, fr := range f.Frames {
					p = append(p, string(fr.Payload))
				}
				got = append(got, strings.Join(p, ","))
			}
			if strings.Join(got, "|") != tc.want {
				t.Fatalf("groups %q, want %s", got, tc.want)
			}
			if n := strings.Count(tc.want, "|") + 1 - strings.Count(tc.want, "-"); decoders < n {
				t.Fatalf("%d decoders for %d groups: each group decodes on its own", decoders, n)
			}
		})
	}
}
