package objstore

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/moq-export/moq-export/record"
)

// Schemes are the URL schemes Open writes: S3 (and S3-compatible
// stores), Google Cloud Storage, Azure Blob Storage (az:// and azblob://
// are the same).
var Schemes = []string{"s3", "gs", "az", "azblob"}

// Location is a parsed object-store output URL: the bucket (an Azure
// container), the object key (a record.Template: {broadcast}, {n},
// {time}) and what the query overrides.
type Location struct {
	Scheme string // s3, gs or az (azblob:// is az)
	Bucket string
	Key    string // the key template, without a leading "/"
	// From the query (empty: what the environment and the SDK's
	// configuration say).
	Endpoint  string // ?endpoint=http://127.0.0.1:9000 (Azure: the account's blob endpoint)
	Region    string // ?region=eu-west-1 (s3:// only)
	PathStyle string // ?path_style=true|false (s3:// only; "": true when an endpoint is set)

	given string // the scheme as written (az or azblob)
}

// ErrURL is wrapped by the refusal of a malformed object-store URL.
var ErrURL = errors.New("object-store URL")

// ParseURL parses s3://BUCKET/KEY[?endpoint=URL&region=R&path_style=BOOL],
// gs://BUCKET/KEY[?endpoint=URL] and az://CONTAINER/KEY[?endpoint=URL]
// (or azblob://). The key may hold the placeholders of record.Template.
// Any other scheme is a *record.SchemeError.
func ParseURL(raw string) (Location, error) {
	scheme := record.URLScheme(raw)
	if !slices.Contains(Schemes, scheme) {
		return Location{}, &record.SchemeError{URL: raw, Scheme: scheme, Known: Schemes}
	}
	rest := raw[len(scheme)+len("://"):]
	rest, query, _ := strings.Cut(rest, "?")
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return Location{}, fmt.Errorf("%w %q: give %s://BUCKET/KEY, e.g. %s://rec/{broadcast}-{time}.mp4", ErrURL, raw, scheme, scheme)
	}
	l := Location{Scheme: scheme, Bucket: bucket, Key: key, given: scheme}
	if scheme == "azblob" {
		l.Scheme = "az"
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Location{}, fmt.Errorf("%w %q: query: %v", ErrURL, raw, err)
	}
	for k, v := range q {
		val := v[len(v)-1]
		switch k {
		case "endpoint":
			u, err := url.Parse(val)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Location{}, fmt.Errorf("%w %q: endpoint %q: give http(s)://HOST[:PORT]", ErrURL, raw, val)
			}
			l.Endpoint = val
		case "region":
			if l.Scheme != "s3" {
				return Location{}, fmt.Errorf("%w %q: region is for s3:// (known here: endpoint)", ErrURL, raw)
			}
			l.Region = val
		case "path_style", "use_path_style", "s3ForcePathStyle":
			if l.Scheme != "s3" {
				return Location{}, fmt.Errorf("%w %q: %s is for s3:// (known here: endpoint)", ErrURL, raw, k)
			}
			if _, err := strconv.ParseBool(val); err != nil {
				return Location{}, fmt.Errorf("%w %q: %s=%q: give true or false", ErrURL, raw, k, val)
			}
			l.PathStyle = val
		default:
			known := "endpoint, region, path_style"
			if l.Scheme != "s3" {
				known = "endpoint"
			}
			return Location{}, fmt.Errorf("%w %q: unknown query parameter %q; known: %s", ErrURL, raw, k, known)
		}
	}
	if _, err := record.ParseTemplate(key); err != nil {
		return Location{}, err
	}
	return l, nil
}

// String is the URL without its query: s3://BUCKET/KEY.
func (l Location) String() string { return l.object(l.Key) }

// object names one object of the location's bucket.
func (l Location) object(key string) string { return l.bucketURL() + "/" + key }

// bucketURL names the bucket: s3://BUCKET.
func (l Location) bucketURL() string {
	s := l.given
	if s == "" {
		s = l.Scheme
	}
	if s == "" {
		s = "s3"
	}
	return s + "://" + l.Bucket
}
