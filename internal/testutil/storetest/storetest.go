// Package storetest runs the emulators of Google Cloud Storage
// (fake-gcs-server) and Azure Blob Storage (Microsoft's Azurite) for
// tests, on loopback ports, and a TCP proxy that takes a server away
// (refused connections) and brings it back: a store outage.
// scripts/fake-gcs-server.sh builds fake-gcs-server (pinned, from the Go
// module proxy) and scripts/azurite.sh installs Azurite (pinned, from
// npm), each into a cache; install-test-deps.sh runs both.
//
// A test asks for a server with GCS or Azure; one server of each kind
// is started per test binary and shared (call Stop from TestMain after
// m.Run). Without the emulator the test is skipped, or fails when
// MOQ_OBJSTORE_REQUIRED=1 (scripts/test.sh sets it, as CI runs that
// script), so the skip is never the normal path.
//
// It imports testing and is for _test.go files only.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// RequiredEnv makes a missing emulator fail the test instead of skipping it.
const RequiredEnv = "MOQ_OBJSTORE_REQUIRED"

// Where the install scripts put the emulators by default; MOQ_FAKEGCS
// and MOQ_AZURITE override them.
const (
	DefaultFakeGCS = "/var/cache/moq-export-fakegcs/bin/fake-gcs-server"
	DefaultAzurite = "/var/cache/moq-export-azurite/node_modules/.bin/azurite-blob"
)

// Azurite's well-known development account.
const (
	AzureAccount = "devstoreaccount1"
	AzureKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// Server is one emulator process.
type Server struct {
	Kind     string // "gcs" or "azure"
	Endpoint string // http://127.0.0.1:PORT (Azure: .../devstoreaccount1)
	Addr     string // 127.0.0.1:PORT

	cmd  *exec.Cmd
	done chan struct{}
	out  *bytes.Buffer
}

var (
	mu     sync.Mutex
	shared = map[string]*Server{}
)

func bin(env, def, name string) string {
	if p := os.Getenv(env); p != "" {
		return p
	}
	if fi, err := os.Stat(def); err == nil && fi.Mode()&0o111 != 0 {
		return def
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return ""
}

func need(t testing.TB, what, script string) {
	t.Helper()
	msg := what + " not installed: run scripts/install-test-deps.sh (or " + script + ")"
	if os.Getenv(RequiredEnv) == "1" {
		t.Fatal(RequiredEnv + "=1: " + msg)
	}
	t.Skip(msg)
}

// GCS returns the test binary's fake-gcs-server.
func GCS(t testing.TB) *Server {
	t.Helper()
	b := bin("MOQ_FAKEGCS", DefaultFakeGCS, "fake-gcs-server")
	if b == "" {
		need(t, "fake-gcs-server", "scripts/fake-gcs-server.sh")
	}
	return start(t, "gcs", func(addr, port, dir string) *exec.Cmd {
		return exec.Command(b, "-scheme", "http", "-host", "127.0.0.1", "-port", port, "-public-host", addr,
			"-backend", "filesystem", "-filesystem-root", dir, "-log-level", "error")
	})
}

// Azure returns the test binary's Azurite (its blob service).
func Azure(t testing.TB) *Server {
	t.Helper()
	b := bin("MOQ_AZURITE", DefaultAzurite, "azurite-blob")
	if b == "" {
		need(t, "azurite", "scripts/azurite.sh")
	}
	return start(t, "azure", func(addr, port, dir string) *exec.Cmd {
		return exec.Command(b, "--blobHost", "127.0.0.1", "--blobPort", port, "--location", dir, "--silent", "--skipApiVersionCheck", "--loose")
	})
}

func start(t testing.TB, kind string, command func(addr, port, dir string) *exec.Cmd) *Server {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if s := shared[kind]; s != nil {
		return s
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	dir, err := os.MkdirTemp("", "storetest-"+kind)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Kind: kind, Addr: addr, Endpoint: "http://" + addr, out: &bytes.Buffer{}}
	if kind == "azure" {
		s.Endpoint += "/" + AzureAccount
	}
	cmd := command(addr, port, dir)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	proctest.Bind(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func() { cmd.Wait(); os.RemoveAll(dir); close(s.done) }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-s.done:
			t.Fatalf("storetest: %s exited: %s", kind, s.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("storetest: %s does not listen on %s after 2 minutes", kind, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	shared[kind] = s
	return s
}

// Stop stops the servers of the test binary (call it from TestMain).
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for k, s := range shared {
		s.cmd.Process.Kill()
		<-s.done
		delete(shared, k)
	}
}

// ConnectionString is Azurite's connection string for endpoint (the
// server's, or a proxy's http://ADDR/devstoreaccount1).
func ConnectionString(endpoint string) string {
	return "DefaultEndpointsProtocol=http;AccountName=" + AzureAccount + ";AccountKey=" + AzureKey + ";BlobEndpoint=" + endpoint + ";"
}

func (s *Server) azure(t testing.TB) *azblob.Client {
	t.Helper()
	c, err := azblob.NewClientFromConnectionString(ConnectionString(s.Endpoint), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket makes bucket (an Azure container) name; one that exists is
// kept.
func (s *Server) Bucket(t testing.TB, name string) {
	t.Helper()
	switch s.Kind {
	case "azure":
		_, err := s.azure(t).CreateContainer(context.Background(), name, nil)
		if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			t.Fatal(err)
		}
	default:
		resp, err := http.Post(s.Endpoint+"/storage/v1/b?project=test", "application/json", strings.NewReader(`{"name":"`+name+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 409 {
			t.Fatalf("storetest: making bucket %s: %s %s", name, resp.Status, b)
		}
	}
}

// ErrNotFound is returned by Object for a missing object.
var ErrNotFound = errors.New("storetest: no such object")

// Object returns the bytes of object key of bucket.
func (s *Server) Object(t testing.TB, bucket, key string) []byte {
	t.Helper()
	b, err := s.Get(bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Get returns the bytes of object key of bucket, or ErrNotFound.
func (s *Server) Get(bucket, key string) ([]byte, error) {
	switch s.Kind {
	case "azure":
		c, err := azblob.NewClientFromConnectionString(ConnectionString(s.Endpoint), nil)
		if err != nil {
			return nil, err
		}
		r, err := c.DownloadStream(context.Background(), bucket, key, nil)
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		defer r.Body.Close()
		return io.ReadAll(r.Body)
	default:
		resp, err := http.Get(s.Endpoint + "/storage/v1/b/" + bucket + "/o/" + url.PathEscape(key) + "?alt=media")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode == 404 {
			return nil, ErrNotFound
		}
		if resp.StatusCode != 200 {
			return nil, fmt.Errorf("storetest: GET %s/%s: %s", bucket, key, resp.Status)
		}
		return io.ReadAll(resp.Body)
	}
}

// Proxy forwards a loopback port to a server; Stop refuses connections
// (and cuts those open) until Start.
type Proxy struct {
	Addr   string
	target string

	mu    sync.Mutex
	l     net.Listener
	conns map[net.Conn]bool
}

// NewProxy starts a proxy to target (HOST:PORT), stopped when t ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{target: target, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(p.Stop)
	return p
}

func (p *Proxy) serve(l net.Listener) {
	p.l = l
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

func (p *Proxy) forward(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.l == nil {
		p.mu.Unlock()
		c.Close()
		u.Close()
		return
	}
	p.conns[c], p.conns[u] = true, true
	p.mu.Unlock()
	go func() { io.Copy(u, c); u.Close() }()
	io.Copy(c, u)
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, u)
	p.mu.Unlock()
}

// Stop takes the server away: the port refuses connections, and those
// open are cut.
func (p *Proxy) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l != nil {
		p.l.Close()
		p.l = nil
	}
	for c := range p.conns {
		c.Close()
	}
}

// Start brings the server back on the same port.
func (p *Proxy) Start(t testing.TB) {
	t.Helper()
	var l net.Listener
	var err error
	for range 50 { // the port was just closed
		if l, err = net.Listen("tcp", p.Addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.serve(l)
	p.mu.Unlock()
}
