// Package cli is the moq-export command: flag parsing (cobra) into the
// options of package record (which records: outputs, templates, formats,
// segments, --record-all), the sources a recording reads from (a relay, the
// built-in demo, publishers that connect to --listen), waits and bounds,
// progress, logs and the summary on stderr, signals and exit codes.
// cmd/moq-export only calls Main.
//
// The package owns nothing about media: it wires package subscribe (or the
// demo) to package export and to the muxers under mux/. What it adds is the
// behaviour people expect from a command-line recorder: errors that say what
// to do, exit codes 0/1/2, a clean stop on Ctrl-C that still finalizes the
// file, quiet handling of a player that closes the pipe, output templates
// that untrusted broadcast names cannot steer outside the output directory,
// and tokens that never reach a log line or an error message.
package cli
