package cli

import (
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// Source is where broadcasts come from: a relay or publisher session, a
// publisher that connected to --listen, or the built-in demo.
type Source interface {
	record.Source
	// Reconnects counts the connections lost and made again.
	Reconnects() int64
	// Version is the protocol version negotiated ("moq-lite-05"; "" for
	// an in-process source).
	Version() string
	// Close ends the source.
	Close() error
}

// Feeds and announcements are package record's.
type (
	Feed         = record.Feed
	Announcement = record.Announcement
)

// localSource serves model broadcasts in this process (no network): the
// --demo-fast demo, and tests of the command without sockets.
type localSource struct{ *record.LocalSource }

func newLocalSource(bcs ...*model.Broadcast) localSource {
	return localSource{record.Local(bcs...)}
}

func (localSource) Reconnects() int64 { return 0 }

func (localSource) Version() string { return "" }

// firstCatalog waits for the first catalog snapshot of b.
var firstCatalog = record.FirstCatalog
