package subscribe_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"time"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/subscribe"
	"github.com/moq-export/moq-export/token"
)

// ExampleDial records a broadcast from a relay: discover it, read its
// catalog, subscribe to its renditions.
func ExampleDial() {
	ctx := context.Background()
	s, err := subscribe.Dial(ctx, "https://relay.example.com/anon?jwt=TOKEN", subscribe.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ann, err := s.Announced(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	a, err := ann.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	b := s.Broadcast(a.Path)
	w, err := catalog.Watch(b, catalog.WatchOptions{})
	if err != nil {
		log.Fatal(err)
	}
	cat, err := w.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range cat.Renditions() {
		track, err := b.Track(r.Name)
		if err != nil {
			log.Printf("%s: %v", r.Name, err)
			continue
		}
		_ = track.Subscribe(500 * time.Millisecond) // hand to the exporter
	}
}

// ExampleListen publishes a broadcast to whoever connects, and shows the
// loopback pairing the CLI demo uses.
func ExampleListen() {
	cert, pin, err := subscribe.SelfSignedCert()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	client, err := subscribe.Dial(ctx, "moql://"+srv.Addr().String()+"/", subscribe.Options{TLSFingerprint: pin})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	peer, err := srv.Accept(ctx)
	if err != nil {
		log.Fatal(err)
	}
	b := model.NewBroadcast("demo.hang")
	b.CreateTrack("catalog.json")
	if err := peer.Publish(b); err != nil {
		log.Fatal(err)
	}
	ann, _ := client.Announced(ctx, "")
	a, err := ann.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Path, a.Active)
	// Output: demo.hang true
}

// ExampleServeLoopback is the CLI's built-in demo: the demo broadcast,
// served on loopback, recorded by a client.
func ExampleServeLoopback() {
	b := model.NewBroadcast("demo.hang")
	cat := b.CreateTrack("catalog.json")
	g, _ := cat.AppendGroup()
	g.WriteFrame(model.Frame{Payload: []byte(`{"audio":{"renditions":{"a":{"codec":"opus","sampleRate":48000,"numberOfChannels":2}}}}`)})
	g.Close(nil)

	srv, url, pin, err := subscribe.ServeLoopback(b, subscribe.ServerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	w, err := catalog.Watch(client.Broadcast("demo.hang"), catalog.WatchOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close()
	c, err := w.Next(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Audio.Renditions["a"].Codec)
	// Output: opus
}

// ExampleListen_authKey accepts only publishers whose token, signed with
// the key of verify.jwk (moq-token / @moq/token format), allows what they
// publish; the others are closed with code 6.
func ExampleListen_authKey() {
	key, err := token.LoadKey("verify.jwk")
	if err != nil {
		log.Fatal(err)
	}
	cert, _, err := subscribe.SelfSignedCert()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := subscribe.Listen(":4443", subscribe.ServerOptions{
		Certificates: []tls.Certificate{cert}, AuthKey: key, MaxSessions: 16,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	for {
		sess, err := srv.Accept(ctx) // admitted: its token verified
		if err != nil {
			return
		}
		ann, err := sess.Announced(ctx, "") // only what the token lets it publish
		if err != nil {
			continue
		}
		if a, err := ann.Next(ctx); err == nil {
			fmt.Println("publishing", a.Path, "from", sess.Remote())
		}
	}
}
