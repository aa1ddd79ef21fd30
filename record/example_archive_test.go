package record_test

import (
	"context"
	"fmt"
	"time"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// ExampleArchiveOutput archives every broadcast of a relay losslessly
// (every rendition, the catalog, a timeline per track) into a directory,
// keeping a one-hour DVR window per track. Run dials the relay with
// subscribe.Options.Objects, which an archive needs.
func ExampleArchiveOutput() {
	ctx := context.Background()
	st, err := archive.Dir("arch")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = record.Run(ctx, record.Options{
		URL:       "https://relay.example/anon?jwt=TOKEN",
		RecordAll: true,
		Output:    record.ArchiveOutput(st, record.ArchiveOptions{Retention: time.Hour}),
	})
	fmt.Println(err)
}

// ExampleNewArchiveSource cuts five minutes of an archived broadcast into
// an MP4 of one rendition, through the same engine that records relays.
func ExampleNewArchiveSource() {
	ctx := context.Background()
	st, err := archive.Dir("arch")
	if err != nil {
		fmt.Println(err)
		return
	}
	src := record.NewArchiveSource(archive.Open(st, ""), record.ArchiveSourceOptions{
		From: archive.Time{Media: time.Hour + 2*time.Minute},
		To:   archive.Time{Wall: time.Date(2026, 12, 1, 10, 7, 0, 0, time.UTC)}, // through the catalog's clock
	})
	defer src.Close()
	out, err := record.Files("clip.mp4", record.FileOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec, err := record.New(record.Options{Output: out, Video: []string{"720p"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.Record(ctx, src, "room/alice"))
}

// ExampleArchiveSource_replay serves an archived broadcast as a live one,
// in real time, to the subscribers of a loopback listener.
func ExampleArchiveSource_replay() {
	st, err := archive.Dir("arch")
	if err != nil {
		fmt.Println(err)
		return
	}
	src := record.NewArchiveSource(archive.Open(st, ""), record.ArchiveSourceOptions{Pace: true, Follow: 2 * time.Second})
	defer src.Close()
	srv, url, pin, err := subscribe.ServeLoopback(src.Broadcast("room/alice"), subscribe.ServerOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	fmt.Println("subscribe to", url, "pinning", pin)
}
