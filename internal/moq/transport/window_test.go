package transport

import (
	"context"
	"crypto/tls"
	"io"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
)

// TestStreamsLeftUnreadDoNotStallTheOthers: a resumed subscription holds
// the group streams that land while its gap is filled, unread, until the
// fill is done: seconds of every audio track of the connection. Those
// must not use up the connection's flow-control window: at quic-go's
// default (768 KB) they did, and every other stream stalled behind them
// (the live video of every broadcast came seconds late and was dropped
// as late). Here 2 MB sits unread in 256 streams while one more stream
// must still get through.
func TestStreamsLeftUnreadDoNotStallTheOthers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cert, _, err := SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"x"}}, QUICConfig(time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := quic.DialAddr(ctx, ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"x"}}, QUICConfig(time.Second, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer client.CloseWithError(0, "")
	server, err := ln.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer server.CloseWithError(0, "")

	const held, size = 256, 8 << 10
	last := []byte("the stream after the held ones")
	sent := make(chan error, 1)
	go func() {
		payload := make([]byte, size)
		for i := 0; i <= held; i++ {
			s, err := client.OpenUniStreamSync(ctx)
			if err != nil {
				sent <- err
				return
			}
			if i == held {
				payload = last
			}
			if _, err := s.Write(payload); err != nil {
				sent <- err
				return
			}
			s.Close()
		}
		sent <- nil
	}()
	var unread []*quic.ReceiveStream // held: accepted, never read
	for len(unread) < held {
		s, err := server.AcceptUniStream(ctx)
		if err != nil {
			t.Fatalf("%d streams accepted: %v", len(unread), err)
		}
		unread = append(unread, s)
	}
	s, err := server.AcceptUniStream(ctx)
	if err != nil {
		t.Fatalf("the stream after %d KB held unread was not accepted: %v", held*size>>10, err)
	}
	got, err := io.ReadAll(s)
	if err != nil || string(got) != string(last) {
		t.Fatalf("read %q, %v", got, err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}
