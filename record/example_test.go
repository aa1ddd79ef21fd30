package record_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// demoRelay stands in for a relay: it serves the demo media as live
// broadcasts on loopback QUIC and returns their URL and certificate pin.
func demoRelay(names ...string) (url, pin string, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var bcs []*model.Broadcast
	for _, n := range names {
		b := model.NewBroadcast(n)
		go demo.Publish(ctx, b, demo.Options{Realtime: true})
		bcs = append(bcs, b)
	}
	srv, url, pin, err := subscribe.ServeLoopback(bcs[0], subscribe.ServerOptions{Publish: bcs[1:], Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	return url, pin, func() { srv.Close(); cancel() }
}

// recordFile records 2 s of broadcast room/alice from the relay at url into
// path: what `moq-export URL -b room/alice --duration 2s -o path` does.
func recordFile(ctx context.Context, url, pin, path string) ([]record.FileInfo, error) {
	out, err := record.Files(path, record.FileOptions{})
	if err != nil {
		return nil, err
	}
	return record.Run(ctx, record.Options{
		URL:       url, // e.g. "https://relay.example/anon?jwt=" + token
		Dial:      subscribe.Options{TLSFingerprint: pin},
		Broadcast: "room/alice",
		Output:    out, // the format follows the extension
		Duration:  2 * time.Second,
	})
}

// Record one broadcast of a relay into one file.
func Example_recordFile() {
	url, pin, stop := demoRelay("room/alice")
	defer stop()
	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)

	files, err := recordFile(context.Background(), url, pin, filepath.Join(dir, "alice.mkv"))
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		fmt.Println(filepath.Base(f.Path), f.Format, f.Frames > 0)
	}
	// Output: alice.mkv mkv true
}

// Record every broadcast a relay announces, each to its own file: what
// `moq-export URL --record-all -o 'rec/{broadcast}.ts' --duration 1s` does.
// Broadcast names are untrusted; {broadcast} makes each one safe file name.
func Example_recordAll() {
	url, pin, stop := demoRelay("room/alice", "room/bob")
	defer stop()
	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	out, err := record.Files(filepath.Join(dir, "rec/{broadcast}.ts"), record.FileOptions{})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Duration: time.Second})
	if err != nil {
		log.Fatal(err)
	}
	// With Duration, RecordAll follows announcements for that long, then
	// returns when those recordings end. Without, it runs until ctx ends.
	if err := rec.RecordAll(ctx, record.SessionSource(sess)); err != nil {
		log.Fatal(err)
	}
	var names []string
	for _, f := range rec.Files() {
		names = append(names, filepath.Base(f.Path))
	}
	slices.Sort(names)
	fmt.Println(names)
	// Output: [room_alice.ts room_bob.ts]
}

// Cut a recording into segments and hand each file on once it is finished
// (closed and playable), for instance to an object store.
func Example_segmentsToUpload() {
	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	// A broadcast made in this process: 4 s of demo media.
	bc := model.NewBroadcast("room/alice")
	go demo.Publish(ctx, bc, demo.Options{Loops: 1, KeepGroups: 1000})

	out, err := record.Files(filepath.Join(dir, "{broadcast}-{n}.mkv"), record.FileOptions{})
	if err != nil {
		log.Fatal(err)
	}
	uploads := make(chan string, 16)
	rec, err := record.New(record.Options{
		Output:  out,
		Segment: time.Second, // a new file at the first keyframe after each second
		OnFile: func(e record.FileEvent) {
			if e.Finished && e.Err == nil {
				uploads <- e.File.Path // an uploader goroutine would take it from here
			}
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := rec.Record(ctx, record.Local(bc), "room/alice"); err != nil {
		log.Fatal(err)
	}
	close(uploads)
	for p := range uploads {
		fmt.Println("upload", filepath.Base(p))
	}
	// Output:
	// upload room_alice-0.mkv
	// upload room_alice-1.mkv
	// upload room_alice-2.mkv
	// upload room_alice-3.mkv
}

// Hold one recording as a value: start it, split it into a second file,
// mark a chapter, stop it alone, and list its finished files.
func ExampleRecorder_Start() {
	url, pin, stop := demoRelay("room/alice")
	defer stop()
	dir, _ := os.MkdirTemp("", "rec")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	sess, err := subscribe.Dial(ctx, url, subscribe.Options{TLSFingerprint: pin})
	if err != nil {
		log.Fatal(err)
	}
	defer sess.Close()
	out, _ := record.Files(filepath.Join(dir, "{broadcast}-{n}.mkv"), record.FileOptions{})
	rec, err := record.New(record.Options{Output: out, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	r := rec.Start(ctx, record.SessionSource(sess), "room/alice")
	for r.Stats().Media < time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	if err := r.Split(); err != nil { // the next file starts at the next keyframe
		log.Fatal(err)
	}
	for len(r.Files()) < 2 {
		time.Sleep(50 * time.Millisecond)
	}
	if err := r.Chapter("second part"); err != nil {
		log.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	r.Stop()
	<-r.Done()
	fmt.Println(r.State(), r.Err())
	for _, f := range r.Files() {
		fmt.Println(filepath.Base(f.Path), f.Frames > 0)
	}
	// Output:
	// ended <nil>
	// room_alice-0.mkv true
	// room_alice-1.mkv true
}
