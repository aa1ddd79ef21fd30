package record

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrOutOfFiles is wrapped by the error of a file that could not be
// created because the process holds as many files as it may (EMFILE) or
// the system does (ENFILE): every running recording holds its output open.
var ErrOutOfFiles = errors.New("out of file descriptors")

// outOfFiles turns an EMFILE or ENFILE of creating path into an error that
// says what ran out and what to do; other errors are returned as they are.
func outOfFiles(path string, err error) error {
	limit := ""
	switch {
	case errors.Is(err, syscall.EMFILE):
		var lim syscall.Rlimit
		if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
			limit = fmt.Sprintf(" (this process may open %d; hard limit %d)", lim.Cur, lim.Max)
		}
	case errors.Is(err, syscall.ENFILE):
		limit = " (the system's limit, fs.file-max)"
	default:
		return err
	}
	return fmt.Errorf("creating %s: %w%s: every running recording holds its file open; raise the limit (ulimit -n, systemd LimitNOFILE=) or record fewer broadcasts at once: %w", path, ErrOutOfFiles, limit, err)
}
