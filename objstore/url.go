package objstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/moq-export/moq-export/record"
)

// Schemes are the URL schemes Open writes.
var Schemes = []string{"s3"}

// Location is a parsed s3:// output URL: the bucket, the object key (a
// record.Template: {broadcast}, {n}, {time}) and what the query overrides.
type Location struct {
	Bucket string
	Key    string // the key template, without a leading "/"
	// From the query (empty: what the environment and the AWS config
	// files say).
	Endpoint  string // ?endpoint=http://127.0.0.1:9000
	Region    string // ?region=eu-west-1
	PathStyle string // ?path_style=true|false ("": true when an endpoint is set)
}

// ErrURL is wrapped by the refusal of a malformed object-store URL.
var ErrURL = errors.New("object-store URL")

// ParseURL parses s3://BUCKET/KEY[?endpoint=URL&region=R&path_style=BOOL].
// The key may hold the placeholders of record.Template. Any other scheme
// is a *record.SchemeError.
func ParseURL(raw string) (Location, error) {
	scheme := record.URLScheme(raw)
	if scheme != "s3" {
		return Location{}, &record.SchemeError{URL: raw, Scheme: scheme, Known: Schemes}
	}
	rest := raw[len("s3://"):]
	rest, query, _ := strings.Cut(rest, "?")
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" || key == "" || strings.HasSuffix(key, "/") {
		return Location{}, fmt.Errorf("%w %q: give s3://BUCKET/KEY, e.g. s3://rec/{broadcast}-{time}.mp4", ErrURL, raw)
	}
	l := Location{Bucket: bucket, Key: key}
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
			l.Region = val
		case "path_style", "use_path_style", "s3ForcePathStyle":
			if _, err := strconv.ParseBool(val); err != nil {
				return Location{}, fmt.Errorf("%w %q: %s=%q: give true or false", ErrURL, raw, k, val)
			}
			l.PathStyle = val
		default:
			return Location{}, fmt.Errorf("%w %q: unknown query parameter %q; known: endpoint, region, path_style", ErrURL, raw, k)
		}
	}
	if _, err := record.ParseTemplate(key); err != nil {
		return Location{}, err
	}
	return l, nil
}

// String is the URL without its query: s3://BUCKET/KEY.
func (l Location) String() string { return "s3://" + l.Bucket + "/" + l.Key }

// object names one object of the location's bucket.
func (l Location) object(key string) string { return "s3://" + l.Bucket + "/" + key }

// newClient makes the S3 client the way the AWS CLI would: credentials
// from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY(/AWS_SESSION_TOKEN), else
// AWS_PROFILE's (or the default) profile of ~/.aws/credentials and
// ~/.aws/config, else SSO, web identity, ECS or EC2 roles; the region from
// AWS_REGION or the profile (default us-east-1); the endpoint from
// AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the profile's endpoint_url.
// The URL query overrides endpoint, region and addressing. An endpoint
// (an S3-compatible store) means path-style addressing unless
// path_style=false. Checksums are computed and checked only where S3
// requires them: the SDK's defaults since 2025 break R2, older MinIO and
// Ceph.
func newClient(ctx context.Context, l Location) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if l.Region != "" {
		opts = append(opts, config.WithRegion(l.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("objstore: AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpointSet := l.Endpoint != "" || cfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
	pathStyle := endpointSet
	if l.PathStyle != "" {
		pathStyle, _ = strconv.ParseBool(l.PathStyle)
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		if l.Endpoint != "" {
			o.BaseEndpoint = aws.String(l.Endpoint)
		}
		o.UsePathStyle = pathStyle
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.RetryMaxAttempts = 1 // retries are ours: backoff with jitter, spooling meanwhile
	}), nil
}
