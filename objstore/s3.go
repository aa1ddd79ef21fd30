package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

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
	out, err := b.c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b.bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(n),
		Body: body, ContentLength: aws.Int64(body.size)})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (b *s3Backend) complete(ctx context.Context, key, id, _ string, parts []partRec) error {
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
	return ups, nil
}
