package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// azureBackend is an Azure Blob Storage container. A part is a block
// staged on the block blob (Put Block), the finish commits the block
// list (Put Block List): the blob is put together from the blocks the
// store already holds, nothing is uploaded twice. Until the commit the
// blocks are invisible (uncommitted; Azure drops them after 7 days);
// RecoverStore finds them by listing the container with uncommitted
// blobs. Block ids name the upload and the part: base64("ID-NNNNNN").
type azureBackend struct {
	c *container.Client
}

// newAzure makes the client the way Azure's tools read their settings:
// AZURE_STORAGE_CONNECTION_STRING (Azurite's, an account key's or a SAS
// one) when set; else the account AZURE_STORAGE_ACCOUNT (endpoint
// https://ACCOUNT.blob.core.windows.net/, or the URL's ?endpoint=) with
// AZURE_STORAGE_KEY (a shared key), AZURE_STORAGE_SAS_TOKEN, or else the
// SDK's DefaultAzureCredential (environment, workload and managed
// identity, the Azure CLI's login). The SDK's own retries are off: ours
// spool meanwhile.
func newAzure(_ context.Context, l Location) (*azureBackend, error) {
	opts := &azblob.ClientOptions{ClientOptions: azcore.ClientOptions{Retry: policy.RetryOptions{MaxRetries: -1}}}
	var (
		c   *azblob.Client
		err error
	)
	account := os.Getenv("AZURE_STORAGE_ACCOUNT")
	endpoint := l.Endpoint
	switch cs := os.Getenv("AZURE_STORAGE_CONNECTION_STRING"); {
	case cs != "" && endpoint != "":
		// The endpoint of the URL, the key of the connection string.
		name, key := connField(cs, "AccountName"), connField(cs, "AccountKey")
		if name == "" || key == "" {
			return nil, fmt.Errorf("objstore: Azure: ?endpoint= with AZURE_STORAGE_CONNECTION_STRING needs its AccountName and AccountKey")
		}
		cred, cerr := azblob.NewSharedKeyCredential(name, key)
		if cerr != nil {
			return nil, fmt.Errorf("objstore: Azure credentials: %w", cerr)
		}
		c, err = azblob.NewClientWithSharedKeyCredential(endpoint, cred, opts)
	case cs != "":
		c, err = azblob.NewClientFromConnectionString(cs, opts)
	default:
		if endpoint == "" {
			if account == "" {
				return nil, fmt.Errorf("objstore: Azure: set AZURE_STORAGE_CONNECTION_STRING, or AZURE_STORAGE_ACCOUNT (with AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN or an Azure identity), or give ?endpoint=")
			}
			endpoint = "https://" + account + ".blob.core.windows.net/"
		}
		switch key, sas := os.Getenv("AZURE_STORAGE_KEY"), os.Getenv("AZURE_STORAGE_SAS_TOKEN"); {
		case key != "":
			if account == "" {
				return nil, fmt.Errorf("objstore: Azure: AZURE_STORAGE_KEY needs AZURE_STORAGE_ACCOUNT")
			}
			cred, cerr := azblob.NewSharedKeyCredential(account, key)
			if cerr != nil {
				return nil, fmt.Errorf("objstore: Azure credentials: %w", cerr)
			}
			c, err = azblob.NewClientWithSharedKeyCredential(endpoint, cred, opts)
		case sas != "":
			c, err = azblob.NewClientWithNoCredential(strings.TrimSuffix(endpoint, "/")+"/?"+strings.TrimPrefix(sas, "?"), opts)
		default:
			cred, cerr := azidentity.NewDefaultAzureCredential(nil)
			if cerr != nil {
				return nil, fmt.Errorf("objstore: Azure credentials: %w", cerr)
			}
			c, err = azblob.NewClient(endpoint, cred, opts)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("objstore: Azure Blob client: %w", err)
	}
	return &azureBackend{c: c.ServiceClient().NewContainerClient(l.Bucket)}, nil
}

// connField is field name of an Azure connection string.
func connField(cs, name string) string {
	for _, kv := range strings.Split(cs, ";") {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func (b *azureBackend) classify(err error) (status int, code string) {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		status, code = re.StatusCode, re.ErrorCode
	}
	if code == string(bloberror.ContainerNotFound) {
		code = "NoSuchBucket"
	}
	return status, code
}

func (b *azureBackend) checkBucket(ctx context.Context) error {
	_, err := b.c.GetProperties(ctx, nil)
	return err
}

func (b *azureBackend) blob(key string) *blockblob.Client { return b.c.NewBlockBlobClient(key) }

func (b *azureBackend) exists(ctx context.Context, key string) (bool, error) {
	_, err := b.blob(key).GetProperties(ctx, nil)
	if st, _ := b.classify(err); st == 404 {
		return false, nil
	}
	return err == nil, err
}

// create makes the id only: blocks are staged on the blob itself.
func (b *azureBackend) create(context.Context, string, string) (string, error) {
	var id [8]byte
	rand.Read(id[:])
	return hex.EncodeToString(id[:]), nil
}

// blockID is the id of part n of upload id: every block id of a blob has
// one length.
func blockID(id string, n int32) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", id, n))
}

var blockName = regexp.MustCompile(`^([0-9a-f]{16})-([0-9]{6})$`)

func (b *azureBackend) uploadPart(ctx context.Context, key, id string, n int32, body *body) (string, error) {
	bid := blockID(id, n)
	_, err := b.blob(key).StageBlock(ctx, bid, streaming.NopCloser(body), nil)
	return bid, err
}

func (b *azureBackend) complete(ctx context.Context, key, id, contentType string, parts []partRec) error {
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = blockID(id, p.N)
	}
	_, err := b.blob(key).CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &contentType}})
	return err
}

// abort leaves the staged blocks: Azure cannot delete uncommitted blocks
// of a blob; it drops them after 7 days, or at the blob's next commit.
func (b *azureBackend) abort(context.Context, string, string) error { return nil }

func (b *azureBackend) put(ctx context.Context, key, contentType string, body *body) error {
	_, err := b.blob(key).Upload(ctx, streaming.NopCloser(body), &blockblob.UploadOptions{HTTPHeaders: &blob.HTTPHeaders{BlobContentType: &contentType}})
	return err
}

func (b *azureBackend) putBytes(ctx context.Context, key string, data []byte) error {
	_, err := b.blob(key).Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), nil)
	return err
}

func (b *azureBackend) get(ctx context.Context, key string) ([]byte, error) {
	r, err := b.blob(key).DownloadStream(ctx, nil)
	if st, _ := b.classify(err); st == 404 {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	return io.ReadAll(r.Body)
}

func (b *azureBackend) listBlobs(ctx context.Context, prefix string, uncommitted bool) ([]objectInfo, error) {
	var objs []objectInfo
	p := b.c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{UncommittedBlobs: uncommitted}})
	for p.More() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, it := range page.Segment.BlobItems {
			o := objectInfo{Key: deref(it.Name)}
			if pr := it.Properties; pr != nil {
				o.Size = deref(pr.ContentLength)
				o.Modified = deref(pr.LastModified)
			}
			objs = append(objs, o)
		}
	}
	return objs, nil
}

func (b *azureBackend) list(ctx context.Context, prefix string) ([]objectInfo, error) {
	return b.listBlobs(ctx, prefix, false)
}

func (b *azureBackend) remove(ctx context.Context, key string) error {
	_, err := b.blob(key).Delete(ctx, nil)
	if st, _ := b.classify(err); st == 404 {
		return nil
	}
	return err
}

// uploads lists the blobs under prefix that have uncommitted blocks of
// ours, grouped by upload. Azure keeps no time per block: LastPart is the
// blob's Last-Modified, which a block staged on a blob that was never
// committed does not move, so idle is measured from the listing of the
// blob instead when there is no committed blob (see RecoverStore).
func (b *azureBackend) uploads(ctx context.Context, prefix string) ([]upload, error) {
	objs, err := b.listBlobs(ctx, prefix, true)
	if err != nil {
		return nil, err
	}
	var ups []upload
	for _, o := range objs {
		bl, err := b.blob(o.Key).GetBlockList(ctx, blockblob.BlockListTypeUncommitted, nil)
		if st, _ := b.classify(err); st == 404 {
			continue
		}
		if err != nil {
			return nil, err
		}
		index := map[string]int{}
		for _, blk := range bl.UncommittedBlocks {
			raw, err := base64.StdEncoding.DecodeString(deref(blk.Name))
			if err != nil {
				continue
			}
			m := blockName.FindSubmatch(raw)
			if m == nil {
				continue
			}
			n, _ := strconv.ParseInt(string(m[2]), 10, 32)
			i, ok := index[string(m[1])]
			if !ok {
				i = len(ups)
				index[string(m[1])] = i
				ups = append(ups, upload{Key: o.Key, ID: string(m[1]), Started: o.Modified, LastPart: o.Modified})
			}
			ups[i].Parts = append(ups[i].Parts, partRec{N: int32(n), Size: deref(blk.Size), ETag: deref(blk.Name)})
		}
	}
	return ups, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
