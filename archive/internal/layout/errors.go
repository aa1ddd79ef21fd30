package layout

import (
	"errors"
	"fmt"
)

// Errors. Test with errors.Is.
var (
	// ErrMalformed is wrapped by every refusal of bytes that break the
	// format (a bad varint, a table that does not tile its payload, a
	// count larger than the object).
	ErrMalformed = errors.New("archive: malformed object")
	// ErrVersion is wrapped when an object's version is not one this
	// package reads.
	ErrVersion = errors.New("archive: unsupported version")
	// ErrEmpty means a segment object with no group.
	ErrEmpty = errors.New("archive: segment holds no group")
	// ErrName is wrapped by the refusal of a key part (a track name
	// encoding, a 19-digit id).
	ErrName = errors.New("archive: bad name")
)

// MalformedError says what of an object broke the format.
type MalformedError struct {
	Object string // "segment", "info", "timeline", "record", ...
	Reason string
}

func (e *MalformedError) Error() string {
	return fmt.Sprintf("archive: malformed %s: %s", e.Object, e.Reason)
}

func (e *MalformedError) Unwrap() error { return ErrMalformed }

func malformed(object, format string, args ...any) error {
	return &MalformedError{Object: object, Reason: fmt.Sprintf(format, args...)}
}
