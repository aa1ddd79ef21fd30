package archive_test

import (
	"context"
	"fmt"

	"github.com/moq-export/moq-export/archive"
	"github.com/moq-export/moq-export/subscribe"
)

// Example archives one broadcast of a relay, then reads the records back:
// the session keeps the objects as received (Options.Objects), Write
// stores them under the broadcast's prefix until it ends, and a Recording
// serves any range of it as a broadcast again.
func Example() {
	ctx := context.Background()
	sess, err := subscribe.Dial(ctx, "https://relay.example/anon?jwt=TOKEN", subscribe.Options{Objects: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sess.Close()
	st, err := archive.Dir("arch")
	if err != nil {
		fmt.Println(err)
		return
	}
	prefix, err := archive.BroadcastPrefix("", "room/alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := archive.Write(ctx, st, prefix, sess.Broadcast("room/alice"), archive.WriteOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	rec, err := archive.Open(st, "").Recording(ctx, "room/alice")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := rec.Broadcast(ctx, archive.ReadOptions{From: 60_000_000}) // from 1 min, to the end
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("read back", b.Name())
}
