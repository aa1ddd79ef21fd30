package record

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrScheme is wrapped by the refusal of an output named by a URL whose
// scheme the Output at hand does not write ("s3://..." given to Files, or
// "ftp://..." anywhere).
var ErrScheme = errors.New("output URL scheme")

// URLScheme returns the scheme of an output named as a URL, lower-cased
// ("s3" for "s3://bucket/rec/{n}.mp4", "file" for "file:///rec/x.mkv"), or
// "" for a path. Only a name of the form scheme://... is a URL: "a:b.mkv"
// is a file name.
func URLScheme(raw string) string {
	i := strings.Index(raw, "://")
	if i <= 0 {
		return ""
	}
	s := raw[:i]
	for j := 0; j < len(s); j++ {
		c := s[j]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case j > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return ""
		}
	}
	return strings.ToLower(s)
}

// LocalPath returns the file path an output name means: a path as it is,
// a file:// URL as its path ("file:///rec/{n}.mkv" is "/rec/{n}.mkv";
// percent escapes are decoded). Any other URL is an error wrapping
// ErrScheme: written as a path it would make a local directory named
// "s3:" and report success.
func LocalPath(raw string) (string, error) {
	switch URLScheme(raw) {
	case "":
		return raw, nil
	case "file":
		rest := raw[len("file://"):]
		host, p, ok := strings.Cut(rest, "/")
		if !ok || (host != "" && !strings.EqualFold(host, "localhost")) {
			return "", fmt.Errorf("%w: %q: a file URL names a path on this machine: file:///abs/path or file://localhost/abs/path", ErrScheme, raw)
		}
		path, err := url.PathUnescape("/" + p)
		if err != nil {
			return "", fmt.Errorf("%w: %q: %v", ErrScheme, raw, err)
		}
		return path, nil
	default:
		return "", &SchemeError{URL: raw, Scheme: URLScheme(raw)}
	}
}

// SchemeError is an output URL of a scheme that is not written here. It
// wraps ErrScheme.
type SchemeError struct {
	URL    string
	Scheme string
	// Known lists the schemes that would have been taken (empty: only
	// paths and file:// URLs).
	Known []string
}

func (e *SchemeError) Error() string {
	known := "a path or a file:// URL"
	if len(e.Known) > 0 {
		known += ", or a URL of " + strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("output %q: %s:// is not an output this can write; give %s", e.URL, e.Scheme, known)
}

func (e *SchemeError) Unwrap() error { return ErrScheme }
