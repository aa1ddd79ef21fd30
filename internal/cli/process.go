package cli

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"syscall"
)

// pprofEnv names the environment variable that serves Go's profiles
// (net/http/pprof: goroutines, heap, CPU) on a loopback address, for
// scripts/bench-fleet.sh and for finding what a long-running recorder
// spends: MOQ_EXPORT_PPROF=127.0.0.1:6060.
const pprofEnv = "MOQ_EXPORT_PPROF"

// servePprof serves the profiles on addr, which must be a loopback address
// (profiles show broadcast names and the command line). It returns the
// address it listens on.
func servePprof(addr string) (string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w; give a loopback host:port such as 127.0.0.1:6060", pprofEnv, addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return "", fmt.Errorf("%s=%s: profiles are served on loopback only; give 127.0.0.1:PORT", pprofEnv, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", pprofEnv, addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	go func() { _ = http.Serve(ln, mux) }()
	return ln.Addr().String(), nil
}

// raiseFDLimit raises the soft limit of open files to the hard limit: a
// --record-all recorder holds one file per broadcast (and MP4 a second
// while it finishes), far beyond the usual soft limit of 1024. Go does the
// same at startup on Linux since 1.19; this keeps it explicit and tells
// what the limit is now. It returns the soft limit in force.
func raiseFDLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, err
	}
	if lim.Cur >= lim.Max {
		return lim.Cur, nil
	}
	raised := lim
	raised.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
		return lim.Cur, err
	}
	return raised.Cur, nil
}

// setupProcess does what only the process (not a test calling Execute)
// should: the fd limit, and the profiles when MOQ_EXPORT_PPROF asks.
func setupProcess() {
	_, _ = raiseFDLimit() // not allowed (a container): the limit stays
	if addr := os.Getenv(pprofEnv); addr != "" {
		got, err := servePprof(addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "moq-export: warning: "+err.Error())
			return
		}
		fmt.Fprintf(os.Stderr, "moq-export: serving Go profiles on http://%s/debug/pprof/\n", got)
	}
}
