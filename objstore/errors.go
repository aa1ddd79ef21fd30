package objstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	Object string // s3://bucket/key, gs://bucket/key, az://container/key
	Status int    // HTTP status (0: no answer: refused, reset, timed out)
	Code   string // the store's error code (NoSuchBucket, AccessDenied, SlowDown, ContainerNotFound...)
	Err    error
}

func (e *StoreError) Error() string {
	what := ""
	switch {
	case errors.Is(e, ErrNoBucket):
		what = ": the bucket does not exist (create it, or check the URL's bucket and endpoint)"
	case errors.Is(e, ErrAccessDenied):
		switch {
		case strings.HasPrefix(e.Object, "gs://"):
			what = ": the store refused the credentials (check GOOGLE_APPLICATION_CREDENTIALS or `gcloud auth application-default login`, and the bucket's IAM)"
		case strings.HasPrefix(e.Object, "az"):
			what = ": the store refused the credentials (check AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_KEY or the identity's role on the container)"
		default:
			what = ": the store refused the credentials (check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE, and the bucket's policy)"
		}
	}
	return fmt.Sprintf("%s %s: %v%s", e.Op, e.Object, e.Err, what)
}

func (e *StoreError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNoBucket) and ErrAccessDenied work.
func (e *StoreError) Is(target error) bool {
	switch target {
	case ErrNoBucket:
		return e.Code == "NoSuchBucket" || e.Code == "ContainerNotFound" || (e.Op == "check bucket" && e.Status == 404)
	case ErrAccessDenied:
		return e.Status == 401 || e.Status == 403 || e.Code == "AccessDenied" || e.Code == "InvalidAccessKeyId" || e.Code == "SignatureDoesNotMatch" ||
			e.Code == "AuthenticationFailed" || e.Code == "AuthorizationFailure"
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
	case e.Code == "RequestTimeout" || e.Code == "SlowDown" || e.Code == "InternalError" || e.Code == "OperationTimedOut" || e.Code == "ServerBusy":
		return false
	}
	return e.Status >= 400
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
