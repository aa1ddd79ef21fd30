package record

import (
	"errors"
	"fmt"
)

// ErrSelection is what errors about the Video and Audio selection (a
// rendition that does not exist, a selection of nothing) match with
// errors.Is: the command's usage errors (exit 2).
var ErrSelection = errors.New("nothing selected that the broadcast has")

// selectionError is an error of the selection; it matches ErrSelection.
type selectionError struct{ msg string }

func (e *selectionError) Error() string { return e.msg }

func (e *selectionError) Is(target error) bool { return target == ErrSelection }

func selectionErrorf(format string, args ...any) error {
	return &selectionError{msg: fmt.Sprintf(format, args...)}
}

// ChapterError is returned by Recording.Chapter for a format whose files
// hold no chapters.
type ChapterError struct{ Format Format }

func (e *ChapterError) Error() string {
	return fmt.Sprintf("%s files hold no chapters (mkv, webm and mp4 do)", e.Format)
}
