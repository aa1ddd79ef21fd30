package subscribe

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/model"
)

// Our moq-transport publisher against a hand-driven subscriber (ietfPeer)
// that sends the filters, fetches and requests our own client never does,
// and reads the objects off the wire.

// ietfPeer is a bare moq-transport client of one draft on a QUIC
// connection: the SETUP done, requests on the control stream (drafts
// 14-16) or on streams of their own (17+), data streams collected.
type ietfPeer struct {
	t     *testing.T
	ctx   context.Context
	v     ietf.Version
	qc    *quic.Conn
	ctrl  *quic.Stream
	ctrlR *bufio.Reader
	next  uint64 // next request id
	data  chan ietfPeerStream
}

// ietfPeerStream is one data stream the peer received, read to its end.
type ietfPeerStream struct {
	fetch   bool
	header  ietf.SubgroupHeader
	objects []ietf.Object
	err     error
}

func newIETFPeer(t *testing.T, ctx context.Context, srv *Server, v ietf.Version) *ietfPeer {
	t.Helper()
	p := &ietfPeer{t: t, ctx: ctx, v: v, qc: rawIETFClient(t, ctx, srv, v.ALPN()), data: make(chan ietfPeerStream, 64)}
	var params ietf.Params
	if v.FlowControl() {
		params.SetVarint(ietf.SetupMaxRequestID, 100)
	}
	if v.ControlStream() {
		str, err := p.qc.OpenStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p.ctrl, p.ctrlR = str, bufio.NewReader(str)
		setup := ietf.ClientSetup{Versions: []ietf.Version{v}, Params: params}
		if _, err := str.Write(ietf.Append(nil, ietf.TypeClientSetup, &setup, v)); err != nil {
			t.Fatal(err)
		}
		if typ, _, err := ietf.ReadMessage(p.ctrlR, v); err != nil || typ != ietf.TypeServerSetup {
			t.Fatalf("SERVER_SETUP: %#x, %v", typ, err)
		}
	} else {
		out, err := p.qc.OpenUniStreamSync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := out.Write(ietf.AppendSetupStream(nil, &ietf.Setup{Params: params}, v)); err != nil {
			t.Fatal(err)
		}
		in, err := p.qc.AcceptUniStream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if typ, _, err := ietf.ReadMessage(bufio.NewReader(in), v); err != nil || typ != ietf.TypeSetupStream {
			t.Fatalf("SETUP: %#x, %v", typ, err)
		}
	}
	go p.readData()
	return p
}

// readData collects every data stream after the setup stream.
func (p *ietfPeer) readData() {
	for {
		str, err := p.qc.AcceptUniStream(context.Background())
		if err != nil {
			return
		}
		go func() {
			r := bufio.NewReader(str)
			var s ietfPeerStream
			typ, err := ietf.ReadVarint(r, p.v)
			switch {
			case err != nil:
				s.err = err
			case typ == ietf.StreamFetch:
				s.fetch = true
				if _, err := ietf.ReadVarint(r, p.v); err != nil {
					s.err = err
					break
				}
				fr := ietf.FetchObjectReader{R: r, V: p.v}
				s.objects, s.err = readObjects(fr.Next, nil)
			default:
				if s.header, s.err = ietf.ReadSubgroupHeader(r, typ, p.v); s.err != nil {
					break
				}
				or := ietf.ObjectReader{R: r, V: p.v, Header: s.header}
				s.objects, s.err = readObjects(or.Next, &s.header.Group)
			}
			p.data <- s
		}()
	}
}

// readObjects reads objects with next to the stream's end; group, when
// set, is the subgroup's group, which its objects do not carry.
func readObjects(next func() (ietf.Object, error), group *uint64) ([]ietf.Object, error) {
	var objs []ietf.Object
	for {
		obj, err := next()
		if err == io.EOF {
			return objs, nil
		}
		if err != nil {
			return objs, err
		}
		if group != nil {
			obj.Group = *group
		}
		objs = append(objs, obj)
	}
}

// stream returns the next data stream read to its end.
func (p *ietfPeer) stream() ietfPeerStream {
	p.t.Helper()
	select {
	case s := <-p.data:
		if s.err != nil {
			p.t.Fatalf("data stream: %v", s.err)
		}
		return s
	case <-p.ctx.Done():
		p.t.Fatal("no data stream")
	}
	return ietfPeerStream{}
}

// ietfPeerRequest is one request: its id, and its own stream (17+).
type ietfPeerRequest struct {
	id  uint64
	str *quic.Stream
	r   *bufio.Reader
}

// send starts a request; body makes its message with the request id.
func (p *ietfPeer) send(typ uint64, body func(id uint64) ietf.Message) *ietfPeerRequest {
	p.t.Helper()
	req := &ietfPeerRequest{id: p.next}
	p.next += 2
	b := ietf.Append(nil, typ, body(req.id), p.v)
	if p.v.ControlStream() {
		if _, err := p.ctrl.Write(b); err != nil {
			p.t.Fatal(err)
		}
		return req
	}
	str, err := p.qc.OpenStreamSync(p.ctx)
	if err != nil {
		p.t.Fatal(err)
	}
	req.str, req.r = str, bufio.NewReader(str)
	if _, err := str.Write(b); err != nil {
		p.t.Fatal(err)
	}
	return req
}

// response reads the next answer to req (on the control stream, skipping
// what concerns other requests).
func (p *ietfPeer) response(req *ietfPeerRequest) (uint64, []byte) {
	p.t.Helper()
	for {
		r := p.ctrlR
		if req.str != nil {
			r = req.r
		}
		typ, body, err := ietf.ReadMessage(r, p.v)
		if err != nil {
			p.t.Fatalf("response to request %d: %v", req.id, err)
		}
		if req.str != nil {
			return typ, body
		}
		switch typ {
		case ietf.TypePublishNamespace, ietf.TypeMaxRequestID:
			continue // the server's own requests and grants
		}
		if id, err := ietf.RequestIDOf(body, p.v); err == nil && id == req.id {
			return typ, body
		}
	}
}

func (p *ietfPeer) decode(body []byte, m ietf.Message) {
	p.t.Helper()
	if err := ietf.Decode(body, m, p.v); err != nil {
		p.t.Fatal(err)
	}
}

// ietfPublishedSample publishes track "t" of broadcast "live" on peer:
// groups 0-4 of three objects each (finished) and group 5 with two so
// far, object o of group g carrying the payload "g.o".
func ietfPublishedSample(t *testing.T, peer *Session) (*model.Track, *model.Group) {
	t.Helper()
	b := model.NewBroadcast("live")
	tr := b.CreateTrack("t")
	tr.SetKeepGroups(100)
	var live *model.Group
	for g := range 6 {
		grp, err := tr.AppendGroup()
		if err != nil {
			t.Fatal(err)
		}
		n := 3
		if g == 5 {
			n = 2
		}
		for o := range n {
			grp.WriteFrame(model.Frame{Timestamp: int64(g*100 + o), Payload: fmt.Appendf(nil, "%d.%d", g, o)})
		}
		if g < 5 {
			grp.Close(nil)
		}
		live = grp
	}
	if err := peer.Publish(b); err != nil {
		t.Fatal(err)
	}
	return tr, live
}

// ietfPublisherPeer starts our server publishing ietfPublishedSample on
// the session it accepts from an ietfPeer of draft v, and returns both.
func ietfPublisherPeer(t *testing.T, ctx context.Context, v ietf.Version) (*ietfPeer, *Session, *model.Track, *model.Group) {
	t.Helper()
	srv, _ := startServer(t, "127.0.0.1:0")
	t.Cleanup(func() { srv.Close() })
	p := newIETFPeer(t, ctx, srv, v)
	peer, err := srv.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tr, live := ietfPublishedSample(t, peer)
	return p, peer, tr, live
}

// locations renders the objects' group.id pairs.
func locations(objs []ietf.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%d.%d", o.Group, o.ID))
	}
	return out
}

var ietfPublisherDrafts = []ietf.Version{ietf.Draft14, ietf.Draft16, ietf.Draft20, ietf.Draft22}

// TestIETFPublisherHonoursSubscribeFilters: each filter starts (and an
// absolute range ends) where the drafts say, resolved against the live
// edge {5, 1} that SUBSCRIBE_OK reports.
func TestIETFPublisherHonoursSubscribeFilters(t *testing.T) {
	type filterCase struct {
		name   string
		filter ietf.Filter
		// want: the objects of the first streams, one string per stream;
		// after: a frame to append to the live group 5 first.
		want  []string
		after bool
		done  uint64 // PUBLISH_DONE status expected once want arrived (0: none)
	}
	common := []filterCase{
		{"AbsoluteStart", ietf.Filter{Type: ietf.FilterAbsoluteStart, Start: ietf.Location{Group: 3, Object: 1}},
			[]string{"3.1 3.2", "4.0 4.1 4.2", "5.0 5.1"}, false, 0},
		{"AbsoluteRange", ietf.Filter{Type: ietf.FilterAbsoluteRange, Start: ietf.Location{Group: 1}, End: 2},
			[]string{"1.0 1.1 1.2", "2.0 2.1 2.2"}, false, ietf.DoneSubscriptionEnded},
		{"NoFilter", ietf.Filter{Type: ietf.FilterAbsoluteStart}, []string{"5.0 5.1"}, false, 0},
	}
	for _, v := range ietfPublisherDrafts {
		cases := append([]filterCase(nil), common...)
		if v >= ietf.Draft20 {
			cases = append(cases,
				filterCase{"NextObject", ietf.Filter{Type: ietf.FilterLargestObject}, []string{"5.2", "6.0"}, true, 0},
				filterCase{"RelativeNextGroup", ietf.Filter{Type: ietf.FilterRelative, Groups: 0}, []string{"6.0"}, true, 0},
				filterCase{"RelativeTwoGroups", ietf.Filter{Type: ietf.FilterRelative, Groups: 2}, []string{"4.0 4.1 4.2", "5.0 5.1"}, false, 0},
			)
		} else {
			cases = append(cases,
				filterCase{"LargestObject", ietf.Filter{Type: ietf.FilterLargestObject}, []string{"5.0 5.1"}, false, 0},
				filterCase{"NextGroup", ietf.Filter{Type: ietf.FilterNextGroup}, []string{"6.0"}, true, 0},
			)
		}
		for _, c := range cases {
			t.Run(fmt.Sprintf("%v/%s", v, c.name), func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				p, peer, tr, live := ietfPublisherPeer(t, ctx, v)
				req := p.send(ietf.TypeSubscribe, func(id uint64) ietf.Message {
					return &ietf.Subscribe{RequestID: id, Namespace: "live", Track: "t", Priority: 1,
						GroupOrder: ietf.GroupOrderAscending, Forward: true, Filter: c.filter}
				})
				typ, body := p.response(req)
				if typ != ietf.TypeSubscribeOK {
					t.Fatalf("answer %#x, want SUBSCRIBE_OK", typ)
				}
				var ok ietf.SubscribeOK
				p.decode(body, &ok)
				if ok.Largest == nil || *ok.Largest != (ietf.Location{Group: 5, Object: 1}) {
					t.Fatalf("SUBSCRIBE_OK Largest %v, want {5 1}", ok.Largest)
				}
				if c.after {
					waitFor(t, "the subscription", func() bool { return peer.pub.pubs.ServingAll() == 1 })
					live.WriteFrame(model.Frame{Timestamp: 502, Payload: []byte("5.2")})
					live.Close(nil)
					g, _ := tr.AppendGroup()
					g.WriteFrame(model.Frame{Timestamp: 600, Payload: []byte("6.0")})
					g.Close(nil)
				}
				// Finished groups end their streams.
				live.Close(nil)
				var got []string
				for len(got) < len(c.want) {
					s := p.stream()
					objs := locations(s.objects)
					if len(s.objects) > 0 && v >= ietf.Draft18 && s.header.FirstObject != (s.objects[0].ID == 0) {
						t.Errorf("stream starting at %s: FIRST_OBJECT %v", objs[0], s.header.FirstObject)
					}
					for i, o := range s.objects {
						if string(o.Payload[len(o.Payload)-3:]) != objs[i] {
							t.Errorf("object %s carries %q", objs[i], o.Payload)
						}
					}
					got = append(got, fmt.Sprint(objs))
				}
				slices.Sort(got)
				want := make([]string, len(c.want))
				for i, w := range c.want {
					want[i] = "[" + w + "]"
				}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Fatalf("streams %v, want %v", got, want)
				}
				if c.done != 0 {
					typ, body := p.response(req)
					var done ietf.PublishDone
					if typ != ietf.TypePublishDone {
						t.Fatalf("message %#x, want PUBLISH_DONE", typ)
					}
					p.decode(body, &done)
					if done.Status != c.done || done.StreamCount != uint64(len(c.want)) {
						t.Fatalf("PUBLISH_DONE %+v, want status %d after %d streams", done, c.done, len(c.want))
					}
				}
			})
		}
	}
}

// TestIETFPublisherServesFetchRanges: a standalone FETCH of a range across
// groups (its end object exclusive), a joining FETCH relative to a
// subscription, and the refusals of a range the track does not hold and of
// an unknown subscription.
func TestIETFPublisherServesFetchRanges(t *testing.T) {
	for _, v := range ietfPublisherDrafts {
		t.Run(v.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, _, _, live := ietfPublisherPeer(t, ctx, v)
			fetch := func(m ietf.Fetch) (uint64, []byte, *ietfPeerRequest) {
				req := p.send(ietf.TypeFetch, func(id uint64) ietf.Message {
					m.RequestID, m.Priority = id, 1
					if m.GroupOrder == 0 {
						m.GroupOrder = ietf.GroupOrderAscending
					}
					return &m
				})
				typ, body := p.response(req)
				return typ, body, req
			}
			expectObjects := func(what, want string) {
				t.Helper()
				s := p.stream()
				if !s.fetch {
					t.Fatalf("%s: a subgroup stream instead of the fetch stream", what)
				}
				if got := fmt.Sprint(locations(s.objects)); got != "["+want+"]" {
					t.Fatalf("%s: objects %s, want [%s]", what, got, want)
				}
			}
			// Group 1 from object 1 through group 3 below object 2.
			typ, body, _ := fetch(ietf.Fetch{Type: ietf.FetchStandalone, Namespace: "live", Track: "t",
				Start: ietf.Location{Group: 1, Object: 1}, End: ietf.Location{Group: 3, Object: 2}})
			if typ != ietf.TypeFetchOK {
				t.Fatalf("answer %#x, want FETCH_OK", typ)
			}
			var fok ietf.FetchOK
			p.decode(body, &fok)
			if fok.End != (ietf.Location{Group: 3, Object: 2}) {
				t.Errorf("FETCH_OK End %v, want {3 2}", fok.End)
			}
			expectObjects("standalone", "1.1 1.2 2.0 2.1 2.2 3.0 3.1")
			// Descending, whole groups 3 and 4.
			if typ, _, _ := fetch(ietf.Fetch{Type: ietf.FetchStandalone, Namespace: "live", Track: "t",
				GroupOrder: ietf.GroupOrderDescending, Start: ietf.Location{Group: 3}, End: ietf.Location{Group: 4}}); typ != ietf.TypeFetchOK {
				t.Fatalf("answer %#x, want FETCH_OK", typ)
			}
			// Descending in draft 14; later drafts' fetch streams are
			// ascending (their group ids are deltas).
			if v == ietf.Draft14 {
				expectObjects("descending", "4.0 4.1 4.2 3.0 3.1 3.2")
			} else {
				expectObjects("descending asked", "3.0 3.1 3.2 4.0 4.1 4.2")
			}
			// Joining: two groups before the subscription's Largest {5, 1},
			// through it.
			live.Close(nil)
			sub := p.send(ietf.TypeSubscribe, func(id uint64) ietf.Message {
				return &ietf.Subscribe{RequestID: id, Namespace: "live", Track: "t", GroupOrder: ietf.GroupOrderAscending,
					Forward: true, Filter: ietf.Filter{Type: ietf.FilterLargestObject}}
			})
			if typ, _ := p.response(sub); typ != ietf.TypeSubscribeOK {
				t.Fatalf("answer %#x, want SUBSCRIBE_OK", typ)
			}
			if v < ietf.Draft20 {
				p.stream() // the subscription's own group 5
			}
			if typ, _, _ := fetch(ietf.Fetch{Type: ietf.FetchRelativeJoining, Joining: sub.id, Offset: 2}); typ != ietf.TypeFetchOK {
				t.Fatalf("joining: answer %#x, want FETCH_OK", typ)
			}
			expectObjects("joining", "3.0 3.1 3.2 4.0 4.1 4.2 5.0 5.1")
			// Refusals.
			refusal := func(what string, m ietf.Fetch, code uint64) {
				t.Helper()
				typ, body, _ := fetch(m)
				if typ != ietf.TypeFetchError && typ != ietf.TypeRequestError {
					t.Fatalf("%s: answer %#x, want a refusal", what, typ)
				}
				var re ietf.RequestError
				p.decode(body, &re)
				if re.Code != code {
					t.Fatalf("%s: code %d, want %d", what, re.Code, code)
				}
			}
			refusal("not held", ietf.Fetch{Type: ietf.FetchStandalone, Namespace: "live", Track: "t",
				Start: ietf.Location{Group: 10}, End: ietf.Location{Group: 12}}, ietf.ReqNoObjects(v))
			refusal("unknown broadcast", ietf.Fetch{Type: ietf.FetchStandalone, Namespace: "nobody", Track: "t",
				End: ietf.Location{Group: 1}}, ietf.ReqDoesNotExist(v))
			refusal("unknown subscription", ietf.Fetch{Type: ietf.FetchAbsoluteJoining, Joining: 999, Offset: 1}, ietf.ReqInvalidJoining(v))
		})
	}
}

// TestIETFPublisherAnswersTrackStatusAndRefusesPublish: TRACK_STATUS gets
// what SUBSCRIBE_OK would say (TRACK_STATUS_OK in draft 14, REQUEST_OK with
// LARGEST_OBJECT later) or TRACK_DOES_NOT_EXIST; PUBLISH is refused
// NOT_SUPPORTED, as @moq/net refuses it.
func TestIETFPublisherAnswersTrackStatusAndRefusesPublish(t *testing.T) {
	for _, v := range ietfPublisherDrafts {
		t.Run(v.String(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			p, _, _, _ := ietfPublisherPeer(t, ctx, v)
			status := func(broadcast string) (uint64, []byte) {
				return p.response(p.send(ietf.TypeTrackStatus, func(id uint64) ietf.Message {
					return &ietf.Subscribe{RequestID: id, Namespace: broadcast, Track: "t", Filter: ietf.Filter{Type: ietf.FilterLargestObject}}
				}))
			}
			typ, body := status("live")
			var largest *ietf.Location
			switch {
			case v == ietf.Draft14 && typ == ietf.TypeTrackStatusOK:
				var ok ietf.SubscribeOK
				p.decode(body, &ok)
				largest = ok.Largest
			case v != ietf.Draft14 && typ == ietf.TypeRequestOK:
				var ok ietf.RequestOK
				p.decode(body, &ok)
				if b, found := ok.Params.Bytes(ietf.ParamLargestObject); found {
					l, err := ietf.DecodeLocation(b, v)
					if err != nil {
						t.Fatal(err)
					}
					largest = &l
				}
			default:
				t.Fatalf("TRACK_STATUS answered %#x", typ)
			}
			if largest == nil || *largest != (ietf.Location{Group: 5, Object: 1}) {
				t.Fatalf("TRACK_STATUS Largest %v, want {5 1}", largest)
			}
			// (A published broadcast has every track it is asked for, as on
			// moq-lite; a broadcast nobody published has none.)
			typ, body = status("nobody")
			if typ != ietf.TypeRequestError && typ != ietf.TypeTrackStatusError {
				t.Fatalf("TRACK_STATUS of an unpublished broadcast answered %#x", typ)
			}
			var re ietf.RequestError
			p.decode(body, &re)
			if re.Code != ietf.ReqDoesNotExist(v) {
				t.Fatalf("code %d, want TRACK_DOES_NOT_EXIST", re.Code)
			}
			// PUBLISH: only its request id is read before the refusal.
			pub := p.send(ietf.TypePublish, func(id uint64) ietf.Message { return &ietf.RequestID{ID: id} })
			typ, body = p.response(pub)
			wantType := uint64(ietf.TypeRequestError)
			if v == ietf.Draft14 {
				wantType = ietf.TypePublishError
			}
			if typ != wantType {
				t.Fatalf("PUBLISH answered %#x, want %#x", typ, wantType)
			}
			p.decode(body, &re)
			if re.Code != ietf.ReqNotSupported {
				t.Fatalf("PUBLISH refused with %d, want NOT_SUPPORTED", re.Code)
			}
		})
	}
}
