package export_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/export"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/mux/mkv"
	"github.com/moq-export/moq-export/subscribe"
)

// A recording service: connect to a relay, follow the broadcasts it
// announces and record each one to a Matroska file. A loopback publisher
// of the demo broadcast stands in for the relay here; a service dials
// something like "https://relay.example/anon?jwt=TOKEN" instead, without
// the pin.
func Example_recordingService() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)

	// Stand-in relay: the demo broadcast on a loopback QUIC listener.
	bc := model.NewBroadcast("demo")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	srv, url, pin, err := subscribe.ServeLoopback(bc, subscribe.ServerOptions{Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	announced, err := sess.Announced(ctx, "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer announced.Close()

	dir, _ := os.MkdirTemp("", "recordings")
	defer os.RemoveAll(dir)
	// A service loops over announcements and records each broadcast in its
	// own goroutine; this example records the first one.
	a, err := announced.Next(ctx)
	if err != nil || !a.Active {
		fmt.Println(a, err)
		return
	}
	f, err := os.Create(filepath.Join(dir, a.Path+".mkv")) // sanitize untrusted names in real code
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	// The file is an io.WriteSeeker, so Close finalizes cues and duration.
	w := mkv.NewWriter(f, mkv.Options{Logger: quiet})
	e := export.New(sess.Broadcast(a.Path), w, export.Options{MaxDuration: time.Second, Logger: quiet})
	if err := e.Run(ctx); err != nil { // ctx cancelled: Run finalizes the file, then returns
		fmt.Println(err)
		return
	}
	fmt.Printf("recorded %s.mkv: %v of media\n", a.Path, e.Stats().MediaTime.Round(time.Second))
	// Output: recorded demo.mkv: 1s of media
}
