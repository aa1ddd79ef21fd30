// Command moq-export records a Media-over-QUIC broadcast as FLV, Matroska/WebM
// or MPEG-TS. Run it with --help for the flags; package internal/cli holds
// the command.
package main

import (
	"os"

	"github.com/moq-export/moq-export/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
