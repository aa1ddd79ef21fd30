package objstore_test

import (
	"context"
	"log"
	"time"

	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
	"github.com/moq-export/moq-export/subscribe"
)

// A recording service records every broadcast of a relay into a bucket,
// in 10-minute objects; credentials and endpoint come from the
// environment as the AWS CLI reads them. Objects a killed recorder left
// in the spool are completed first.
func Example() {
	ctx := context.Background()
	out, err := objstore.Open(ctx, "s3://rec/{broadcast}-{time}-{n}.mp4", objstore.Options{SpoolDir: "/var/spool/moq-export"})
	if err != nil {
		log.Fatal(err) // a missing bucket or refused credentials end here
	}
	if _, err := out.Recover(ctx); err != nil {
		log.Print(err)
	}
	sess, err := subscribe.Dial(ctx, "https://relay.example/anon?jwt=TOKEN", subscribe.Options{})
	if err != nil {
		log.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Segment: 10 * time.Minute,
		OnFile: func(e record.FileEvent) {
			if e.Finished && e.Err == nil {
				log.Printf("%s: %d bytes, %.1f s", e.File.URL, e.File.Size, e.File.Media)
			}
		}})
	if err != nil {
		log.Fatal(err)
	}
	err = rec.RecordAll(ctx, record.SessionSource(sess))
	log.Print(err, rec.Stats().Upload)
}
