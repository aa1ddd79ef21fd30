package record_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// Accept publishers and record what they announce, each broadcast to its
// own files: what `moq-export --listen ADDR --record-all -o
// 'rec/{broadcast}-{n}.mkv'` does, as a service embeds it. Here a
// publisher in the same process connects and publishes the demo as
// "alice"; any moq-lite publisher (OBS through moq, a browser with
// @moq/publish, `moq-export --demo-to`) does the same.
func Example_listen() {
	cert, fingerprint, err := subscribe.SelfSignedCert()
	if err != nil {
		log.Fatal(err)
	}
	srv, err := subscribe.Listen("127.0.0.1:0", subscribe.ServerOptions{Certificates: []tls.Certificate{cert}})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	src := record.NewServerSource(srv)
	defer src.Close()

	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)
	out, err := record.Files(filepath.Join(dir, "{broadcast}-{n}.mkv"), record.FileOptions{})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Duration: time.Second,
		OnFile: func(e record.FileEvent) {
			if e.Finished {
				fmt.Println("finished", filepath.Base(e.File.Path), e.File.Broadcast)
			}
		}})
	if err != nil {
		log.Fatal(err)
	}

	// The publisher: it pins the server's certificate.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pub, err := subscribe.Dial(ctx, "moql://"+srv.Addr().String()+"/", subscribe.Options{Role: subscribe.RolePublisher, TLSFingerprint: fingerprint})
	if err != nil {
		log.Fatal(err)
	}
	defer pub.Close()
	bc := model.NewBroadcast("alice")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	if err := pub.Publish(bc); err != nil {
		log.Fatal(err)
	}

	// Records each broadcast announced for 1 s (Duration), then returns.
	if err := rec.RecordAll(ctx, src); err != nil {
		log.Fatal(err)
	}
	// Output: finished alice-0.mkv alice
}
