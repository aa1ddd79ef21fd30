package ietfsub

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/moq-export/moq-export/internal/moq/ietf"
	"github.com/moq-export/moq-export/internal/moq/ietf/ietfpub"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/internal/moqpath"
)

// The session's control: the control stream (drafts 14-16) or the peer's
// SETUP stream (drafts 17+, where only GOAWAY follows), the request
// streams the peer opens, and the peer's GOAWAY.

// Serve readies the session to serve pub's publications to its peer
// (before the connection is served) and returns the loop that announces
// them. onGoAway is the peer's GOAWAY: move to uri ("" the same one),
// keeping the connection up to grace for the groups in flight.
func (s *Session) Serve(pub *ietfpub.Publisher, onGoAway func(uri string, grace time.Duration)) (announce func()) {
	s.served, s.onGoAway = pub.On(s), onGoAway
	return s.served.Announce
}

// ControlLoop reads the control stream until it fails, and returns why
// (session.ErrProtocol when the peer broke the protocol, session.ErrTimeout
// when a message it began did not come whole within messageTimeout).
func (s *Session) ControlLoop() error {
	for {
		// The stream may be quiet between messages for as long as the
		// peer likes; a message that began must come whole.
		if _, err := s.ctrlR.Peek(1); err != nil {
			return protocolErr(err)
		}
		typ, body, err := readWithin(s.ctrlIn, s.ctrlR, s.v, "control message")
		if err != nil {
			return protocolErr(err)
		}
		if err := s.control(typ, body); err != nil {
			return err
		}
	}
}

// control handles one control message.
func (s *Session) control(typ uint64, body []byte) error {
	v := s.v
	if !v.ControlStream() && typ != ietf.TypeGoAway {
		return fmt.Errorf("%w: message %#x on the setup stream", session.ErrProtocol, typ)
	}
	decode := func(m ietf.Message) error {
		if err := ietf.Decode(body, m, v); err != nil {
			return fmt.Errorf("message %#x: %w", typ, protocolErr(err))
		}
		return nil
	}
	switch typ {
	case ietf.TypeSubscribeOK, ietf.TypeRequestError, ietf.TypePublishDone, ietf.TypeFetchOK,
		ietf.TypeFetchError, ietf.TypeRequestOK, ietf.TypeSubscribeNamespaceOK,
		ietf.TypeSubscribeNamespaceErr, ietf.TypePublishError:
		// Responses to our requests start with the request id.
		id, err := ietf.RequestIDOf(body, v)
		if err != nil {
			return fmt.Errorf("message %#x: %w", typ, protocolErr(err))
		}
		s.route(id, message{typ, body})
	case ietf.TypePublishNamespaceError:
		if v.PerRequestResponses() {
			id, err := ietf.RequestIDOf(body, v)
			if err != nil {
				return protocolErr(err)
			}
			s.route(id, message{typ, body})
			break
		}
		// Drafts 15+: a NAMESPACE entry (no request id), on the control
		// stream only from a peer answering a draft-15 SUBSCRIBE_NAMESPACE
		// with draft 16's entries.
		s.routeNamespace(message{typ, body})
	case ietf.TypeNamespaceDone:
		// Draft 14: TRACK_STATUS_OK, which we never ask for; later drafts:
		// NAMESPACE_DONE, as NAMESPACE above.
		if v.PerRequestResponses() {
			s.log.Debug("moq: unrequested TRACK_STATUS_OK ignored")
			break
		}
		s.routeNamespace(message{typ, body})
	case ietf.TypePublishNamespace:
		var m ietf.PublishNamespace
		if err := decode(&m); err != nil {
			return err
		}
		s.Grant(m.RequestID)
		s.peerPublished(m.Namespace, m.RequestID)
		return s.WriteControl(ietf.TypeRequestOK, &ietf.RequestOK{RequestID: m.RequestID})
	case ietf.TypePublishNamespaceDone:
		var m ietf.PublishNamespaceDone
		if err := decode(&m); err != nil {
			return err
		}
		s.peerUnpublished(m.Namespace, m.RequestID, v.NamespaceDoneByID())
	case ietf.TypeMaxRequestID:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		s.raiseMax(m.ID)
	case ietf.TypeRequestsBlocked:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		s.Grant(m.ID)
	case ietf.TypeGoAway:
		var m ietf.GoAway
		if err := decode(&m); err != nil {
			return err
		}
		s.goAway(m)
	case ietf.TypeSubscribe, ietf.TypeFetch, ietf.TypeSubscribeNamespace14, ietf.TypeTrackStatus, ietf.TypePublish:
		// Requests of a peer that subscribes to what we publish.
		return protocolErr(s.served.Request(nil, nil, typ, body))
	case ietf.TypeUnsubscribe, ietf.TypeFetchCancel:
		var m ietf.RequestID
		if err := decode(&m); err != nil {
			return err
		}
		s.served.Cancel(m.ID)
	case ietf.TypeUnsubscribeNamespace, ietf.TypePublishNamespaceCancel, ietf.TypeRequestUpdate:
		// Nothing to undo: SUBSCRIBE_NAMESPACE changed nothing, a refused
		// PUBLISH_NAMESPACE stays offered, updates are not followed.
	default:
		return fmt.Errorf("%w: unknown control message %#x", session.ErrProtocol, typ)
	}
	return nil
}

// goAwayGrace is how long the connection stays after GOAWAY before the
// session moves (the subscriptions' groups in flight finish); a GOAWAY of
// drafts 17+ may ask for less.
const goAwayGrace = time.Second

// goAway handles GOAWAY: no new requests on this connection, and the
// session moves (Serve's onGoAway), the connection staying up to
// goAwayGrace (less when the GOAWAY asks) for the subscriptions' groups in
// flight to finish.
func (s *Session) goAway(m ietf.GoAway) {
	s.mu.Lock()
	s.goingOff = true
	s.mu.Unlock()
	grace := goAwayGrace
	if m.Timeout > 0 {
		grace = min(grace, time.Duration(m.Timeout)*time.Millisecond)
	}
	if s.onGoAway != nil {
		s.onGoAway(m.URI, grace)
	}
}

// SendGoAway asks the peer to move to uri ("" for the same one).
func (s *Session) SendGoAway(uri string) error {
	m := ietf.GoAway{URI: uri}
	if s.v.ControlStream() {
		return s.WriteControl(ietf.TypeGoAway, &m)
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := s.setupOut.Write(ietf.Append(nil, ietf.TypeGoAway, &m, s.v))
	return err
}

// HandleBidi serves a request stream the peer opened (drafts 17+;
// SUBSCRIBE_NAMESPACE from draft 16): PUBLISH_NAMESPACE is accepted and
// lasts as long as its stream, requests to publish go to our publisher.
func (s *Session) HandleBidi(str session.Stream) {
	r := bufio.NewReaderSize(str, readBuffer)
	// The stream was opened for its request: a peer that opens one and
	// says nothing whole holds it, and this goroutine, only for as long as
	// messageTimeout.
	typ, body, err := readWithin(str, r, s.v, "request")
	if err != nil {
		if errors.Is(err, session.ErrTimeout) {
			s.log.Debug("moq: request stream", "err", err)
		}
		session.ResetStream(str, codeCancel)
		return
	}
	id, err := ietf.RequestIDOf(body, s.v)
	if err != nil {
		session.ResetStream(str, CodeProtocolViolation)
		return
	}
	if typ != ietf.TypePublishNamespace {
		if err := s.served.Request(str, r, typ, body); err != nil {
			s.log.Warn("moq: request stream", "err", err)
			session.ResetStream(str, CodeProtocolViolation)
		}
		return
	}
	var m ietf.PublishNamespace
	if err := ietf.Decode(body, &m, s.v); err != nil {
		s.log.Warn("moq: PUBLISH_NAMESPACE", "err", err)
		session.ResetStream(str, CodeProtocolViolation)
		return
	}
	if _, err := str.Write(ietf.Append(nil, ietf.TypeRequestOK, &ietf.RequestOK{RequestID: id}, s.v)); err != nil {
		return
	}
	s.peerPublished(m.Namespace, id)
	// The namespace is withdrawn when its stream ends (or with
	// PUBLISH_NAMESPACE_DONE in draft 16).
	_, err = io.Copy(io.Discard, r)
	if s.c.Gone(err) {
		// The connection's end is no withdrawal: the broadcast may come
		// back on the next one.
		return
	}
	s.peerUnpublished(m.Namespace, id, true)
	str.Close()
}

// peerPublished records a namespace the peer published.
func (s *Session) peerPublished(ns string, id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peerNS[moqpath.Clean(ns)] = id
	close(s.nsCh)
	s.nsCh = make(chan struct{})
}

// peerUnpublished forgets a namespace, by name or (draft 16) request id.
func (s *Session) peerUnpublished(ns string, id uint64, byID bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if byID {
		for p, x := range s.peerNS {
			if x == id {
				delete(s.peerNS, p)
			}
		}
	} else {
		delete(s.peerNS, moqpath.Clean(ns))
	}
	close(s.nsCh)
	s.nsCh = make(chan struct{})
}

// messageTimeout bounds a message that began on the control stream, and
// the request a peer's request stream opens with (CONTROL_MESSAGE_TIMEOUT).
var messageTimeout = 10 * time.Second

// readWithin reads one message of r, which reads str, ending the read by a
// deadline when the message is not whole within messageTimeout: nothing
// else wakes a read on a stream whose peer went silent while its
// connection stays up (a WebTransport stream's CancelRead does not either).
// A message that took that long is a timeout even if it came whole as the
// deadline fell; the deadline stays set then, and the stream is given up.
// what names the message in the error, which wraps session.ErrTimeout.
func readWithin(str interface{ SetReadDeadline(time.Time) error }, r *bufio.Reader, v ietf.Version, what string) (uint64, []byte, error) {
	var (
		typ  uint64
		body []byte
		err  error
	)
	if session.ReadWithin(str, messageTimeout, func() { typ, body, err = ietf.ReadMessage(r, v) }) {
		return 0, nil, fmt.Errorf("%w: a %s the peer began was not whole within %v", session.ErrTimeout, what, messageTimeout)
	}
	return typ, body, err
}
