package subscribe

import (
	"crypto/tls"

	"github.com/moq-export/moq-export/model"
)

// ServeLoopback publishes b on a loopback listener with a fresh self-signed
// certificate: every session that connects gets b. It returns the server
// (Close stops it), a moql:// URL for Dial and the pin for
// Options.TLSFingerprint. The CLI's built-in demo and tests use it.
func ServeLoopback(b *model.Broadcast, opts ServerOptions) (srv *Server, rawURL, fingerprint string, err error) {
	cert, pin, err := SelfSignedCert()
	if err != nil {
		return nil, "", "", err
	}
	opts.Certificates = []tls.Certificate{cert}
	opts.Publish = append(opts.Publish, b)
	srv, err = Listen("127.0.0.1:0", opts)
	if err != nil {
		return nil, "", "", err
	}
	// Nobody calls Accept: take the sessions so they do not wait.
	srv.wg.Add(1)
	go func() {
		defer srv.wg.Done()
		for {
			if _, err := srv.Accept(srv.ctx); err != nil {
				return
			}
		}
	}()
	return srv, "moql://" + srv.Addr().String() + "/", pin, nil
}
