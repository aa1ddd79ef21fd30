package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/moq-export/moq-export/record"
)

// LevelNotice is what the command says at the default verbosity: what it
// records, that it waits, what it wrote. Above Info (shown with -v), below
// Warn (still shown with -q).
const LevelNotice = record.LevelNotice

// Log formats (--log-format).
const (
	logText = "text"
	logJSON = "json"
)

// logLevel is the lowest level shown for -q and -v counts.
func logLevel(quiet bool, verbose int) slog.Level {
	switch {
	case quiet:
		return slog.LevelWarn
	case verbose == 1:
		return slog.LevelInfo
	case verbose > 1:
		return slog.LevelDebug
	}
	return LevelNotice
}

// newLogger returns the command's logger writing to con: one record per
// line, in the human form of humanHandler or as JSON (--log-format json),
// whatever the verbosity.
func newLogger(con io.Writer, format string, level slog.Level) *slog.Logger {
	return newStampedLogger(con, format, level, false)
}

// logger is the command's logger as the flags ask: --log-format, -q and
// -v, --log-time.
func (c *Config) logger(con io.Writer) *slog.Logger {
	return newStampedLogger(con, c.LogFormat, logLevel(c.Quiet, c.Verbose), c.LogTime)
}

// newStampedLogger is newLogger whose text lines begin with the record's
// UTC time when stamp is set (JSON records carry it always).
func newStampedLogger(con io.Writer, format string, level slog.Level, stamp bool) *slog.Logger {
	if format == logJSON {
		return slog.New(slog.NewJSONHandler(con, &slog.HandlerOptions{Level: level, ReplaceAttr: jsonLevelNames}))
	}
	return slog.New(&humanHandler{w: con, level: level, mu: &sync.Mutex{}, stamp: stamp})
}

// stampLayout is --log-time's: RFC 3339 in UTC to the millisecond.
const stampLayout = "2006-01-02T15:04:05.000Z"

// jsonLevelNames gives JSON records the standard level names a log
// pipeline knows (a notice, what the command says at the default
// verbosity, is "INFO", not slog's "INFO+2"), and renders errors in the
// command's words.
func jsonLevelNames(groups []string, a slog.Attr) slog.Attr {
	if err, ok := a.Value.Any().(error); ok {
		return slog.String(a.Key, describe(err))
	}
	if len(groups) == 0 && a.Key == slog.LevelKey {
		if l, ok := a.Value.Any().(slog.Level); ok && l == LevelNotice {
			return slog.String(slog.LevelKey, slog.LevelInfo.String())
		}
	}
	return a
}

// humanHandler writes a record as one line for people:
//
//	moq-export: warning: skipping rendition (broadcast=demo rendition=vp8 err="...")
//
// Notices carry no level word, warnings and errors say so, -v and -vv
// records say info and debug. Attributes follow in parentheses as
// key=value, quoted when they hold spaces. With stamp (--log-time) the
// line begins with the record's UTC time:
//
//	2026-12-03T19:45:04.635Z moq-export: info: a recording caught up with live (broadcast=loc after=41s ...)
type humanHandler struct {
	w     io.Writer
	level slog.Level
	stamp bool
	mu    *sync.Mutex
	attrs string // preformatted attributes of WithAttrs
	group string // prefix of WithGroup
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	if h.stamp && !r.Time.IsZero() {
		b.WriteString(r.Time.UTC().Format(stampLayout))
		b.WriteString(" ")
	}
	b.WriteString("moq-export: ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	case r.Level >= LevelNotice:
	case r.Level >= slog.LevelInfo:
		b.WriteString("info: ")
	default:
		b.WriteString("debug: ")
	}
	b.WriteString(r.Message)
	attrs := h.attrs
	r.Attrs(func(a slog.Attr) bool {
		attrs = appendAttr(attrs, h.group, a)
		return true
	})
	if attrs != "" {
		b.WriteString(" (")
		b.WriteString(attrs)
		b.WriteString(")")
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	for _, a := range as {
		c.attrs = appendAttr(c.attrs, c.group, a)
	}
	return &c
}

func (h *humanHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group += name + "."
	return &c
}

// appendAttr appends key=value to s, space-separated.
func appendAttr(s, group string, a slog.Attr) string {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return s
	}
	if a.Value.Kind() == slog.KindGroup {
		g := group
		if a.Key != "" {
			g += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			s = appendAttr(s, g, ga)
		}
		return s
	}
	if s != "" {
		s += " "
	}
	return s + group + a.Key + "=" + quoteValue(a.Value)
}

// quoteValue renders v, quoted when it is empty or holds spaces, quotes or
// control characters.
func quoteValue(v slog.Value) string {
	var s string
	switch v.Kind() {
	case slog.KindDuration:
		s = v.Duration().String()
	case slog.KindTime:
		s = v.Time().UTC().Format(time.RFC3339Nano)
	default:
		if err, ok := v.Any().(error); ok {
			s = describe(err)
		} else {
			s = fmt.Sprint(v.Any())
		}
	}
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '"' || r == '(' || r == ')' || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// notice logs msg at LevelNotice.
func notice(log *slog.Logger, msg string, args ...any) {
	log.Log(context.Background(), LevelNotice, msg, args...)
}
