package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// s3Backend is an S3 bucket: parts are the parts of an S3 multipart
// upload, and the store puts the object together from them at
// CompleteMultipartUpload.
type s3Backend struct {
	c      *s3.Client
	bucket string
}

// newS3 makes the S3 client the way the AWS CLI would: credentials
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
func newS3(ctx context.Context, l Location) (*s3Backend, error) {
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
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if l.Endpoint != "" {
			o.BaseEndpoint = aws.String(l.Endpoint)
		}
		o.UsePathStyle = pathStyle
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.RetryMaxAttempts = 1 // retries are ours: backoff with jitter, spooling meanwhile
	})
	return &s3Backend{c: c, bucket: l.Bucket}, nil
}

func (b *s3Backend) classify(err error) (status int, code string) {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	return status, code
}

func (b *s3Backend) checkBucket(ctx context.Context) error {
	_, err := b.c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &b.bucket})
	return err
}

func (b *s3Backend) exists(ctx context.Context, key string) (bool, error) {
	_, err := b.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if st, _ := b.classify(err); st == 404 {
		return false, nil
	}
	return err == nil, err
}

func (b *s3Backend) create(ctx context.Context, key, contentType string) (string, error) {
	out, err := b.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &key, ContentType: &contentType,
		Metadata: map[string]string{"moq-export": "recording"}})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.UploadId), nil
}

func (b *s3Backend) uploadPart(ctx context.Context, key, id string, n int32, body *body) (string, error) {
	if n == 0 {
		// The file's header (see file.initEnd): S3 numbers parts from 1
		// and wants 5 MiB in each but the last, so it is an object of its
		// own, under partsPrefix.
		_, err := b.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: aws.String(partName(key, id, 0)), Body: body, ContentLength: aws.Int64(body.size),
			Metadata: map[string]string{"moq-export": "header"}})
		return "", err
	}
	out, err := b.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b.bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
		Body: body, ContentLength: aws.Int64(body.size)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (b *s3Backend) complete(ctx context.Context, key, id, contentType string, parts []partRec) error {
	if len(parts) > 0 && parts[0].N == 0 {
		return b.completeFromHeader(ctx, key, id, contentType, parts[1:])
	}
	if err := b.completeParts(ctx, key, id, parts); err != nil {
		return err
	}
	b.removeHeader(ctx, key, id)
	return nil
}

// removeHeader deletes the header object of upload id, if there is one
// (best effort: RecoverStore deletes one left over).
func (b *s3Backend) removeHeader(ctx context.Context, key, id string) {
	b.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: aws.String(partName(key, id, 0))})
}

// completeFromHeader makes key the header object of upload id followed by
// parts (from the second on: the head part never reached the store). S3
// cannot put a small object in front of parts (a part but the last holds
// 5 MiB or more), so the parts are completed into key first, then a second
// upload makes key the header and the first headCopy bytes (read back and
// sent again) followed by the rest, copied in the store (UploadPartCopy).
// Tried again after a failure, it takes up where it stopped: an object
// that already begins with the header is done.
func (b *s3Backend) completeFromHeader(ctx context.Context, key, id, contentType string, parts []partRec) error {
	hkey := partName(key, id, 0)
	header, err := b.get(ctx, hkey)
	if err != nil {
		return fmt.Errorf("the header of %s: %w", key, err)
	}
	if err := b.completeParts(ctx, key, id, parts); err != nil {
		if _, code := b.classify(err); code != "NoSuchUpload" {
			return err
		}
		// Completed by an earlier try.
		if begins, err := b.getRange(ctx, key, 0, int64(len(header))); err == nil && bytes.Equal(begins, header) {
			b.removeHeader(ctx, key, id)
			return nil
		}
	}
	st, err := b.c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return err
	}
	size := aws.ToInt64(st.ContentLength)
	first, err := b.getRange(ctx, key, 0, min(size, headCopy))
	if err != nil {
		return err
	}
	whole := append(header, first...)
	if int64(len(first)) == size {
		if _, err := b.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: bytes.NewReader(whole),
			ContentLength: aws.Int64(int64(len(whole))), ContentType: &contentType}); err != nil {
			return err
		}
		b.removeHeader(ctx, key, id)
		return nil
	}
	nid, err := b.create(ctx, key, contentType)
	if err != nil {
		return err
	}
	err = b.copyBehind(ctx, key, nid, whole, size)
	if err != nil {
		b.abort(ctx, key, nid)
		return err
	}
	b.removeHeader(ctx, key, id)
	return nil
}

// headCopy is what completeFromHeader reads back and sends again with the
// header: a first part must hold 5 MiB.
const headCopy = 6 << 20

// copyPartMax is the most one UploadPartCopy copies here (S3 allows 5 GiB).
const copyPartMax = 1 << 30

// copyBehind makes key, in upload id, first (the header and key's first
// headCopy bytes) followed by key's bytes from headCopy to size, copied
// in the store.
func (b *s3Backend) copyBehind(ctx context.Context, key, id string, first []byte, size int64) error {
	etag, err := b.uploadPart(ctx, key, id, 1, mustBody(first))
	if err != nil {
		return err
	}
	parts := []partRec{{N: 1, ETag: etag}}
	src := (&url.URL{Path: b.bucket + "/" + key}).EscapedPath()
	for off, n := int64(headCopy), int32(2); off < size; off, n = off+copyPartMax, n+1 {
		rng := fmt.Sprintf("bytes=%d-%d", off, min(off+copyPartMax, size)-1)
		out, err := b.c.UploadPartCopy(ctx, &s3.UploadPartCopyInput{Bucket: &b.bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
			CopySource: &src, CopySourceRange: &rng})
		if err != nil {
			return err
		}
		etag := ""
		if out.CopyPartResult != nil {
			etag = aws.ToString(out.CopyPartResult.ETag)
		}
		parts = append(parts, partRec{N: n, ETag: etag})
	}
	return b.completeParts(ctx, key, id, parts)
}

func mustBody(p []byte) *body {
	b, _ := newBody(bytes.NewReader(p))
	return b
}

// getRange reads n bytes of key from off.
func (b *s3Backend) getRange(ctx context.Context, key string, off, n int64) ([]byte, error) {
	r, err := b.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key, Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+n-1))})
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *s3Backend) completeParts(ctx context.Context, key, id string, parts []partRec) error {
	cp := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		cp[i] = types.CompletedPart{PartNumber: aws.Int32(p.N), ETag: aws.String(p.ETag)}
	}
	_, err := b.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: cp}})
	return err
}

func (b *s3Backend) abort(ctx context.Context, key, id string) error {
	_, err := b.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: &id})
	if _, code := b.classify(err); code == "NoSuchUpload" {
		err = nil // a header left over: its upload is gone
	}
	b.removeHeader(ctx, key, id)
	return err
}

func (b *s3Backend) put(ctx context.Context, key, contentType string, body *body) error {
	_, err := b.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key, Body: body, ContentLength: aws.Int64(body.size), ContentType: &contentType})
	return err
}

func (b *s3Backend) putBytes(ctx context.Context, key string, data []byte) error {
	_, err := b.c.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key,
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))})
	return err
}

func (b *s3Backend) get(ctx context.Context, key string) ([]byte, error) {
	r, err := b.c.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if st, _ := b.classify(err); st == 404 {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *s3Backend) list(ctx context.Context, prefix string) ([]objectInfo, error) {
	var objs []objectInfo
	p := s3.NewListObjectsV2Paginator(b.c, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			if strings.HasPrefix(aws.ToString(o.Key), partsPrefix) {
				continue // the header of an unfinished upload
			}
			objs = append(objs, objectInfo{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)})
		}
	}
	return objs, nil
}

func (b *s3Backend) remove(ctx context.Context, key string) error {
	_, err := b.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key})
	return err
}

func (b *s3Backend) uploads(ctx context.Context, prefix string) ([]upload, error) {
	var ups []upload
	in := &s3.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: &prefix}
	for {
		out, err := b.c.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, u := range out.Uploads {
			ups = append(ups, upload{Key: aws.ToString(u.Key), ID: aws.ToString(u.UploadId), Started: aws.ToTime(u.Initiated)})
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	for i := range ups {
		u := &ups[i]
		in := &s3.ListPartsInput{Bucket: &b.bucket, Key: &u.Key, UploadId: &u.ID}
		for {
			out, err := b.c.ListParts(ctx, in)
			if err != nil {
				return nil, err
			}
			for _, p := range out.Parts {
				u.Parts = append(u.Parts, partRec{N: aws.ToInt32(p.PartNumber), Size: aws.ToInt64(p.Size), ETag: aws.ToString(p.ETag)})
				if t := aws.ToTime(p.LastModified); t.After(u.LastPart) {
					u.LastPart = t
				}
			}
			if !aws.ToBool(out.IsTruncated) {
				break
			}
			in.PartNumberMarker = out.NextPartNumberMarker
		}
	}
	// The headers of the uploads, under partsPrefix; one whose upload is
	// gone (completed, or aborted, before the header was deleted) is an
	// upload of its header alone: RecoverStore deletes it.
	index := map[string]int{}
	for i, u := range ups {
		index[u.Key+"\x00"+u.ID] = i
	}
	hp := partsPrefix + prefix
	p := s3.NewListObjectsV2Paginator(b.c, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &hp})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, o := range page.Contents {
			rest := strings.TrimPrefix(aws.ToString(o.Key), partsPrefix)
			dir, num := path.Split(rest)
			key, id := path.Split(strings.TrimSuffix(dir, "/"))
			key = strings.TrimSuffix(key, "/")
			if num != "00000" || key == "" || id == "" {
				continue
			}
			mod := aws.ToTime(o.LastModified)
			i, ok := index[key+"\x00"+id]
			if !ok {
				i = len(ups)
				index[key+"\x00"+id] = i
				ups = append(ups, upload{Key: key, ID: id, Started: mod})
			}
			ups[i].Parts = append(ups[i].Parts, partRec{N: 0, Size: aws.ToInt64(o.Size)})
			if mod.After(ups[i].LastPart) {
				ups[i].LastPart = mod
			}
		}
	}
	return ups, nil
}
