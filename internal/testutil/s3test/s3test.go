// Package s3test runs a real S3-compatible server for tests: versitygw
// (Apache-2.0, a gateway that keeps each object as a plain file under a
// directory), on a loopback port, with the access key "test" and the
// secret "testsecret" (its root account), and versitygw's own IAM, where
// User adds an account that owns no bucket (access denied). scripts/versitygw.sh builds it (pinned, from the
// Go module proxy) into a cache; install-test-deps.sh runs that script.
//
// A test asks for a Server with Start; without versitygw it is skipped,
// or fails when MOQ_S3_REQUIRED=1 (scripts/test.sh sets it, as CI runs
// that script), so the skip is never the normal path. Stop and Restart
// take the same server away and bring it back on the same port and
// directory: a store outage.
//
// It imports testing and is for _test.go files only.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moq-export/moq-export/internal/testutil/proctest"
)

// Credentials of every Server.
const (
	AccessKey = "test"
	SecretKey = "testsecret"
)

// RequiredEnv makes a missing versitygw fail the test instead of skipping it.
const RequiredEnv = "MOQ_S3_REQUIRED"

// BinEnv names the versitygw binary to use; else DefaultBin, else PATH.
const BinEnv = "MOQ_VERSITYGW"

// DefaultBin is where scripts/versitygw.sh puts the binary by default.
const DefaultBin = "/var/cache/moq-export-versitygw/bin/versitygw"

// Server is one versitygw process serving Dir on Endpoint.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Dir      string // the posix root: bucket B is Dir/B, object K is Dir/B/K

	bin  string
	addr string
	iam  string // versitygw's IAM directory (its accounts)
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Bin returns the versitygw binary, or "" when there is none.
func Bin() string {
	if p := os.Getenv(BinEnv); p != "" {
		return p
	}
	if fi, err := os.Stat(DefaultBin); err == nil && fi.Mode()&0o111 != 0 {
		return DefaultBin
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	return ""
}

// Start runs a server for t on a free loopback port and stops it when t
// ends. It skips t when versitygw is missing (fails it with
// MOQ_S3_REQUIRED=1).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Bin()
	if bin == "" {
		msg := "versitygw not installed: run scripts/install-test-deps.sh (or scripts/versitygw.sh), or set " + BinEnv
		if os.Getenv(RequiredEnv) == "1" {
			t.Fatal(RequiredEnv + "=1: " + msg)
		}
		t.Skip(msg)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	s := &Server{Endpoint: "http://" + addr, Dir: t.TempDir(), bin: bin, addr: addr, iam: t.TempDir()}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := proctest.Command(s.bin, "--port", s.addr, "--iam-dir", s.iam, "--quiet", "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("s3test: versitygw exited: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3test: versitygw does not listen on %s after 20 s", s.addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop takes the server away (connections are refused until Restart).
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-done
}

// Restart brings a stopped server back on the same port and directory.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
}

// User adds an account with the role "user" to the server's IAM: its
// credentials are valid, but it owns no bucket, so the buckets made with
// Bucket answer its requests with 403 AccessDenied.
func (s *Server) User(t testing.TB, access, secret string) {
	t.Helper()
	out, err := exec.Command(s.bin, "admin", "--access", AccessKey, "--secret", SecretKey, "--endpoint-url", s.Endpoint,
		"create-user", "--access", access, "--secret", secret, "--role", "user").CombinedOutput()
	if err != nil {
		t.Fatalf("s3test: create-user %s: %v: %s", access, err, out)
	}
}

// Env is the environment a client of the server needs, as the AWS tools
// read it.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey, "AWS_REGION=us-east-1", "AWS_ENDPOINT_URL=" + s.Endpoint,
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}
}

// SetEnv sets Env in this process (for the rest of the test binary's
// life: call it from TestMain, or use t.Setenv).
func (s *Server) SetEnv() {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
}

// Bucket makes bucket name (a directory of the posix root: versitygw
// serves every directory there as a bucket) and returns its directory.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(s.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Object returns the bytes of object key of bucket, read from the
// server's directory.
func (s *Server) Object(t testing.TB, bucket, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.Dir, bucket, filepath.FromSlash(key)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var _ = context.Background
