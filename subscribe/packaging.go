package subscribe

import (
	"github.com/moq-export/moq-export/internal/hang"
	"github.com/moq-export/moq-export/internal/moq/session"
	"github.com/moq-export/moq-export/model"
)

// packagingOf returns how published track name of b goes on the wire
// (session.Packaging).
func packagingOf(b *model.Broadcast, name string) hang.Track { return session.Packaging(b, name) }
