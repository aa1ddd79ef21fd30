package subscribe

import (
	"context"
	"crypto/tls"
	"errors"
	"net"

	"github.com/moq-export/moq-export/catalog"
	"github.com/moq-export/moq-export/model"
)

var errTODO = errors.New("moq: not implemented yet")

// Session is one moq-lite session, dialled (Dial, reconnecting) or accepted
// (Server.Accept). Its methods are safe for concurrent use.
type Session struct{}

// Dial connects to rawURL (moql://, moqt://, https:// or http://; see the
// package doc) and returns a session that reconnects by itself until Close,
// ctx only bounds the first connection.
func Dial(ctx context.Context, rawURL string, opts Options) (*Session, error) {
	return nil, errTODO
}

// Path returns the session root as the client requested it: the URL path
// for a dialled session, the SETUP Path or CONNECT path for an accepted one
// (without query).
func (s *Session) Path() string { return "" }

// Broadcast returns the peer's broadcast at path (relative to the session
// root). Its tracks are subscribed on demand (model.Broadcast.Track). The
// same path returns the same broadcast until it ends (an "ended"
// announcement or Close); then a new one.
func (s *Session) Broadcast(path string) *model.Broadcast { return nil }

// Announced starts discovery of the peer's broadcasts under prefix ("" for
// all) and returns the feed. Close it when done.
func (s *Session) Announced(ctx context.Context, prefix string) (*Announcements, error) {
	return nil, errTODO
}

// Publish serves b to the peer under b.Name() until b ends or Unpublish.
func (s *Session) Publish(b *model.Broadcast) error { return errTODO }

// Unpublish stops serving the broadcast at path and announces its end.
func (s *Session) Unpublish(path string) {}

// Done is closed when the session is over for good.
func (s *Session) Done() <-chan struct{} { return nil }

// Err returns why the session ended (nil while running; ErrClosed after
// Close).
func (s *Session) Err() error { return nil }

// Close ends the session (code 0), its subscriptions (their tracks end with
// ErrClosed) and its publications.
func (s *Session) Close() error { return nil }

// Announcement is one change in the set of the peer's broadcasts.
type Announcement struct {
	// Path is the broadcast path relative to the session root.
	Path string
	// Active is true when the broadcast (re)started, false when it ended.
	Active bool
}

// Announcements is a live feed of announcements under a prefix. It
// survives reconnects: after one, broadcasts that are gone are reported
// ended and new ones active.
type Announcements struct{}

// Next returns the next announcement, waiting for one until ctx ends.
func (a *Announcements) Next(ctx context.Context) (Announcement, error) {
	return Announcement{}, errTODO
}

// Active lists the paths announced active now, sorted.
func (a *Announcements) Active() []string { return nil }

// Close stops the feed.
func (a *Announcements) Close() {}

// CatalogWatcher follows the catalog of one broadcast.
type CatalogWatcher struct{}

// CatalogOptions configure WatchCatalog.
type CatalogOptions struct {
	// Track forces the catalog track name (catalog.json, catalog.json.z or
	// catalog). Default: catalog for names ending in ".msf", otherwise
	// catalog.json.
	Track string
}

// WatchCatalog subscribes the catalog track of b and returns a watcher.
func WatchCatalog(b *model.Broadcast, opts CatalogOptions) (*CatalogWatcher, error) {
	return nil, errTODO
}

// Next returns the newest catalog snapshot not returned yet, waiting for
// one until ctx ends. Older snapshots that were overtaken are never
// returned. It returns the track's error (io.EOF for a clean end) once the
// catalog track ends.
func (w *CatalogWatcher) Next(ctx context.Context) (*catalog.Catalog, error) { return nil, errTODO }

// Close stops watching.
func (w *CatalogWatcher) Close() {}

// ResolveBroadcast resolves a rendition's "broadcast" reference against the
// path of the broadcast whose catalog holds it, like a relative URL:
// "./source" in "room/transcode" is "room/source", "" is the catalog's
// broadcast, "." its parent. ok is false when ref escapes above the root.
func ResolveBroadcast(catalogBroadcast, ref string) (path string, ok bool) { return "", false }

// Server accepts moq-lite sessions on one UDP port.
type Server struct{}

// Listen starts accepting sessions on addr (host:port, UDP).
func Listen(addr string, opts ServerOptions) (*Server, error) { return nil, errTODO }

// Addr returns the UDP address the server listens on.
func (s *Server) Addr() net.Addr { return nil }

// Accept returns the next session.
func (s *Server) Accept(ctx context.Context) (*Session, error) { return nil, errTODO }

// Close stops listening and closes every accepted session.
func (s *Server) Close() error { return nil }

// SelfSignedCert returns an ECDSA certificate for hosts (default
// "localhost", "127.0.0.1", "::1"), valid from a day ago for 14 days (the
// WebTransport pinning limit), and its pin: the lowercase hex SHA-256 of the
// DER leaf, for Options.TLSFingerprint.
func SelfSignedCert(hosts ...string) (cert tls.Certificate, fingerprint string, err error) {
	return tls.Certificate{}, "", errTODO
}
