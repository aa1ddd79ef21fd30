package objstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// ErrNoBucket and ErrAccessDenied are wrapped by a *StoreError for a
// bucket that does not exist and for credentials the store refuses: both
// permanent, found by Open before anything is recorded.
var (
	ErrNoBucket     = errors.New("no such bucket")
	ErrAccessDenied = errors.New("access denied")
)

// ErrSpoolFull is wrapped by the error that cuts a recording when the
// spool holds Options.SpoolMax bytes that wait for the store.
var ErrSpoolFull = errors.New("spool full")

// StoreError is a request the store failed or refused.
type StoreError struct {
	Op     string // "upload part 3", "check bucket", ...
	Object string // s3://bucket/key
	Status int    // HTTP status (0: no answer: refused, reset, timed out)
	Code   string // the S3 error code (NoSuchBucket, AccessDenied, SlowDown...)
	Err    error
}

func (e *StoreError) Error() string {
	what := ""
	switch {
	case errors.Is(e, ErrNoBucket):
		what = ": the bucket does not exist (create it, or check the URL's bucket and endpoint)"
	case errors.Is(e, ErrAccessDenied):
		what = ": the store refused the credentials (check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's policy)"
	}
	return fmt.Sprintf("%s %s: %v%s", e.Op, e.Object, e.Err, what)
}

func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoBucket) and ErrAccessDenied work.
func (e *StoreError) Is(target error) bool {
	switch target {
	case ErrNoBucket:
		return e.Code == "NoSuchBucket" || (e.Op == "check bucket" && e.Status == 404)
	case ErrAccessDenied:
		return e.Status == 403 || e.Code == "AccessDenied" || e.Code == "InvalidAccessKeyId" || e.Code == "SignatureDoesNotMatch"
	}
	return false
}

// Permanent reports whether trying again cannot help: the store answered
// with a client error (a missing bucket or upload, refused credentials).
// Refused connections, timeouts, 5xx, 429 and S3's RequestTimeout are
// transient.
func (e *StoreError) Permanent() bool {
	switch {
	case e.Status == 0, e.Status >= 500, e.Status == 429, e.Status == 408:
		return false
	case e.Code == "RequestTimeout" || e.Code == "SlowDown" || e.Code == "InternalError":
		return false
	}
	return e.Status >= 400
}

// storeError wraps err of a request as a *StoreError.
func storeError(op, object string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	se := &StoreError{Op: op, Object: object, Err: err}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		se.Status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		se.Code = ae.ErrorCode()
	}
	return se
}

// permanent reports whether err cannot be cured by trying again.
func permanent(err error) bool {
	var se *StoreError
	if errors.As(err, &se) {
		return se.Permanent()
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// Backoff of retries: the wait doubles from backoffMin to backoffMax, and
// each wait is drawn from its upper half (jitter), so recorders that lost
// the store together do not come back in step.
const (
	backoffMin = 200 * time.Millisecond
	backoffMax = 5 * time.Second
)

// retryWait is the wait before try number attempt+1 (attempt counts from
// 0); rnd in [0, 1) is the jitter.
func retryWait(attempt int, rnd float64) time.Duration {
	d := backoffMin
	for i := 0; i < attempt && d < backoffMax; i++ {
		d *= 2
	}
	d = min(d, backoffMax)
	return d/2 + time.Duration(rnd*float64(d/2))
}
