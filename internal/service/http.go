package service

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moq-export/moq-export/mux/hls"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

//go:embed status.html
var statusPage []byte

// ErrNeedsToken is returned by Serve for an address other hosts can reach
// when no token is set.
var ErrNeedsToken = errors.New("an HTTP listener reachable from other hosts needs a bearer token")

// Handler returns the service's HTTP handler: /metrics, /health, /ready,
// /api/v1/recordings..., /files/... and the status page at /. Every path
// but /health needs the token, when one is set.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /ready", s.handleReady)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{}))
	s.routes(mux)
	mux.HandleFunc("GET /files/", s.handleFile)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self' 'unsafe-inline'; media-src 'self'")
		_, _ = w.Write(statusPage)
	})
	return s.authorize(mux)
}

// authorize requires the bearer token on every path but /health: in the
// Authorization header, or (for the status page's <video> and links, which
// cannot set headers) in a cookie the page's first load sets from
// ?token=.
func (s *Service) authorize(next http.Handler) http.Handler {
	if s.opts.Token == "" {
		return next
	}
	want := []byte(s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if c, err := r.Cookie(tokenCookie); got == "" && err == nil {
			got = c.Value
		}
		if q := r.URL.Query().Get("token"); got == "" && q != "" && r.URL.Path == "/" {
			got = q
			if subtle.ConstantTimeCompare([]byte(got), want) == 1 {
				http.SetCookie(w, &http.Cookie{Name: tokenCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			}
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="moq-export"`)
			s.writeJSON(w, http.StatusUnauthorized, apiError{Error: "this needs the bearer token (Authorization: Bearer TOKEN)"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

const tokenCookie = "moq_export_token"

func (s *Service) handleReady(w http.ResponseWriter, r *http.Request) {
	var problems []string
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if err := writable(s.opts.Root); err != nil {
		problems = append(problems, "output not writable: "+err.Error())
	}
	w.Header().Set("Content-Type", "text/plain")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintln(w, strings.Join(problems, "\n"))
		return
	}
	fmt.Fprintln(w, "ready")
}

// writable checks that files can be created in dir (creating it).
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".moq-export-ready-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// handleFile serves a file under the root (with Range, for <video>):
// finished files, and the files of a package (HLS/DASH) while it is
// recorded, never another file being written, never anything outside the
// root. Every response names its bytes (hls.ServeFile): manifests by their
// content and Cache-Control: no-cache, so a player polling a package as it
// is recorded never keeps a replaced playlist.
func (s *Service) handleFile(w http.ResponseWriter, r *http.Request) {
	rel := strings.TrimPrefix(r.URL.Path, "/files/")
	path := filepath.Join(s.opts.Root, filepath.FromSlash(rel))
	if rel == "" || !within(s.opts.Root, path) || s.hidden(path) {
		http.NotFound(w, r)
		return
	}
	// os.Root refuses "..", and symbolic links that leave the root.
	root, err := os.OpenRoot(s.opts.Root)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer root.Close()
	switch strings.ToLower(filepath.Ext(path)) {
	case ".mp4":
		w.Header().Set("Content-Type", "video/mp4")
	case ".webm":
		w.Header().Set("Content-Type", "video/webm")
	case ".mkv":
		w.Header().Set("Content-Type", "video/x-matroska")
	case ".ts":
		w.Header().Set("Content-Type", "video/mp2t")
	case ".flv":
		w.Header().Set("Content-Type", "video/x-flv")
	}
	_ = hls.ServeFile(w, r, root, rel)
}

// Serve listens on addr and serves Handler until ctx ends. An address
// other hosts can reach (not loopback) needs Options.Token. It returns
// once listening, with the address (":0" picks a port).
func (s *Service) Serve(ctx context.Context, addr string) (net.Addr, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("http address %q: %w", addr, err)
	}
	if !loopbackHost(host) && s.opts.Token == "" {
		return nil, fmt.Errorf("http address %q: %w", addr, ErrNeedsToken)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.log.Info("serving metrics, the API and the status page", "addr", "http://"+ln.Addr().String())
	return ln.Addr(), nil
}

// loopbackHost reports whether host names this machine only.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
