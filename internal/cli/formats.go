package cli

import (
	"errors"
	"os"
	"syscall"

	"github.com/moq-export/moq-export/record"
	"golang.org/x/term"
)

// The command's formats and templates are package record's.
type (
	Format   = record.Format
	Template = record.Template
)

// Output formats.
const (
	FLV  = record.FLV
	MKV  = record.MKV
	WebM = record.WebM
	TS   = record.TS
	MP4  = record.MP4
	HLS  = record.HLS
)

// isTerminal reports whether f is a terminal. /dev/null is a character
// device but no terminal: the check asks the terminal driver.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// isBrokenPipe reports whether err says the reader of our output went away
// (a player that quit, `| head`).
func isBrokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE)
}
