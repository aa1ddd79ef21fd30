package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moq-export/moq-export/internal/units"
	"github.com/moq-export/moq-export/record"
)

// describe renders err in the command's words: the typed errors of package
// record (which name no flags) get the flag, the advice and the player
// they are about; the rest of the chain is kept as it is.
func describe(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	if errors.Is(err, record.ErrEnhancedFLV) {
		msg = strings.Replace(msg, record.ErrEnhancedFLV.Error(), "ffmpeg >= 7 plays it, Debian 12's ffmpeg 5.1 cannot read it; -f mkv plays everywhere", 1)
	}
	for _, r := range []func(error) (lib, cli string, ok bool){
		describeAs(func(e *record.WaitError) string {
			if e.Broadcast == "" {
				return fmt.Sprintf("no broadcast was announced %s within --wait %v; check the URL and the token, or wait longer", e.Origin, e.Wait)
			}
			return fmt.Sprintf("broadcast %q was not announced %s within --wait %v (or sent no catalog); --list shows what is announced", e.Broadcast, e.Origin, e.Wait)
		}),
		describeAs(func(e *record.EmptyWindowError) string {
			return fmt.Sprintf("no broadcast was announced %s within --duration %v (counted from the start, connecting included), so nothing was recorded; check the URL and the token, or record for longer", e.Origin, e.Window)
		}),
		describeAs(func(e *record.PackageDirError) string {
			s := strings.Replace(e.Error(), "give each package a directory of its own, e.g. ", "give -o a directory of its own, e.g. -o ", 1)
			return strings.Replace(s, "give each package a prefix of its own, e.g. ", "give -o a prefix of its own, e.g. -o ", 1)
		}),
		describeAs(func(e *record.CatalogError) string { return e.Error() + "; check the name with --list" }),
		describeAs(func(e *record.SelectionError) string { return e.Error() + "; see --list -b " + e.Broadcast }),
		describeAs(func(e *record.RenditionError) string {
			s := fmt.Sprintf("--%s %s: %v", e.Kind, e.Name, e.Err)
			if strings.Contains(e.Err.Error(), " instead") {
				return s // it says what to use
			}
			return s + "; " + formatAdvice(e.Broadcast, e.Others)
		}),
		describeAs(func(e *record.FormatError) string {
			return fmt.Sprintf("%s cannot carry any selected rendition of %q (%s): %s", e.Format, e.Broadcast, strings.Join(e.Renditions, ", "), formatAdvice(e.Broadcast, e.Others))
		}),
		describeAs(func(e *record.LimitError) string {
			switch e.Limit {
			case record.LimitRecordings:
				return fmt.Sprintf("%v: %d recordings running, --max-broadcasts is %d", record.ErrLimit, e.Have, e.Max)
			case record.LimitFileBytes:
				return fmt.Sprintf("%v: %s reached --max-bytes %s", record.ErrLimit, e.Path, units.ByteSize(e.Max))
			case record.LimitOverload:
				return e.Error() + "; record fewer broadcasts per process, or give it more CPU"
			}
			return fmt.Sprintf("%v: %s free on the disk of %s, below --min-free %s", record.ErrLimit, units.ByteSize(e.Have), e.Path, units.ByteSize(e.Max))
		}),
		describeAs(func(e *record.ExistsError) string {
			return e.Error() + ": pass -y to overwrite it, or give -o another name"
		}),
		describeAs(func(e *record.OutOfFilesError) string {
			return e.Error() + "; raise the limit (ulimit -n, systemd LimitNOFILE=) or record fewer broadcasts at once"
		}),
	} {
		if lib, cli, ok := r(err); ok {
			msg = strings.Replace(msg, lib, cli, 1)
		}
	}
	return msg
}

// describeAs makes a describer of the errors of type E in err's chain.
func describeAs[E error](words func(E) string) func(error) (string, string, bool) {
	return func(err error) (string, string, bool) {
		e, ok := errors.AsType[E](err)
		if !ok {
			return "", "", false
		}
		return e.Error(), words(e), true
	}
}

// formatAdvice says what to do about renditions the output cannot take:
// the formats that can, or other renditions.
func formatAdvice(broadcast string, others []record.Format) string {
	if len(others) > 0 {
		s := make([]string, len(others))
		for i, f := range others {
			s[i] = string(f)
		}
		return "record with -f " + strings.Join(s, " or -f ")
	}
	return "pick other renditions with --video/--audio (see --list -b " + broadcast + ")"
}

// waitHint says how long a wait lasts, for notices of a wait: until
// --wait, or until Ctrl-C.
func waitHint(wait time.Duration) string {
	if wait > 0 {
		return fmt.Sprintf("giving up after --wait %v", wait)
	}
	return "until Ctrl-C; --wait DURATION gives up after DURATION"
}

// sayWaiting is the command's notice of a long wait of a recording
// (record.Options.OnWait).
func (a *app) sayWaiting(w record.Waiting) {
	if a.cfg.Listen != "" {
		// Every publisher's session waits for its announcements: say it
		// once, with the port bound.
		w.Origin = a.origin()
		if w.Broadcast == "" {
			a.mu.Lock()
			said := a.waitSaid
			a.waitSaid = true
			a.mu.Unlock()
			if said {
				return
			}
		}
	}
	switch {
	case w.Broadcast == "":
		notice(a.log, "waiting for broadcasts to be announced "+w.Origin+" ("+waitHint(w.Wait)+")")
	case a.cfg.RecordAll:
		// --record-all records what was announced: this broadcast was,
		// and it is its catalog that has not come (a wait once read as a
		// broadcast never announced, when its publisher had lost the
		// catalog).
		notice(a.log, fmt.Sprintf("broadcast %q is announced %s but has sent no catalog yet; waiting for it (%s)", w.Broadcast, w.Origin, waitHint(w.Wait)))
	default:
		notice(a.log, fmt.Sprintf("waiting for broadcast %q to be announced %s (%s; --list shows what is announced)", w.Broadcast, w.Origin, waitHint(w.Wait)))
	}
}

// enhancedFLVNote explains the flv* of --list and the warning of a
// recording.
const enhancedFLVNote = "Enhanced FLV (H.265, AV1, VP9, Opus in FLV) needs ffmpeg >= 7 to play; Debian 12's ffmpeg 5.1 cannot read it: prefer -f mkv"
