// Package objstore records into object storage: Output is a record.Output
// whose Files are objects of an S3 bucket (s3://BUCKET/KEY, the key a
// record.Template), a Google Cloud Storage bucket (gs://BUCKET/KEY) or an
// Azure Blob Storage container (az://CONTAINER/KEY, also azblob://),
// uploaded while they are recorded, finished in the store without a
// second upload of the media, and completed after a crash or a store
// outage from a local spool.
//
// # What it owns
//
// The URLs (ParseURL: the query may set endpoint, and for s3:// region
// and path_style), the clients and their credentials (GCS and Azure: see
// below; S3 (as the AWS CLI reads them:
// AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN, AWS_PROFILE
// and ~/.aws/{config,credentials} with SSO, assume-role and web identity,
// ECS/EC2 roles; AWS_REGION (default us-east-1); AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL or a profile's endpoint_url for an S3-compatible store,
// which means path-style addressing)), the spool, the multipart uploads,
// retries, the finish, recovery and the upload accounting (UploadStats).
// It does not own the containers: the muxers finish through the
// record.RemoteFile contract (MP4 hands over the head of the regular file,
// MKV leaves its Cluster and Segment sizes unknown, FLV patches only its
// head, TS rewrites nothing).
//
// # How an object is written
//
// The muxer writes a spool file (ID.media in Options.SpoolDir) as it would
// write a local file: buffered, flushed at least every 500 ms, whole
// writes only. The first PartSize bytes (8 MiB by default) are the head
// part: they stay in the spool, because the finish rewrites them (the
// moov of a regular MP4 goes in front; MKV and FLV patch their headers).
// Every further PartSize bytes, cut before the next sync point (see
// Failures; TS: where a muxer's write ended), become a part of a
// multipart upload, sent by an uploader goroutine (one per
// object while it has parts to send) in order; once the store took a part
// its range is punched out of the spool file (fallocate), so the spool
// holds the head part, the parts waiting for the store and the tail: a
// recording's disk use is about 2 × PartSize while the store keeps up, and
// memory per object is its bookkeeping and the 256 KiB write buffer of a
// file output, never a part (parts are read from the spool as the request
// body).
//
// At a clean stop the head part (for MP4: the new head, ftyp + moov + mdat
// header, followed by the head part's bytes from the first moof on, so the
// moof boxes become unused bytes inside the mdat) and the tail are sent as
// the first and last parts, and CompleteMultipartUpload makes the store put
// the object together from the parts it holds: every byte goes up once,
// plus the MP4 moov (~1% of the file). Bytes uploaded / bytes recorded
// measured 1.0000-1.0003 for 110 MB recordings of each format (see the
// tests). A recording shorter than two parts goes up in one PutObject at
// the end, from the spool. The object is a regular MP4 (moov before mdat),
// an MKV/WebM with Cues and Duration (Clusters of unknown size, which
// Matroska allows), an FLV with its duration, a TS.
//
// # Failures
//
//   - A store that fails (refused connections, 5xx, 429, timeouts) is
//     retried with backoff (200 ms doubling to 5 s) and jitter (each wait
//     from the upper half), for as long as the recording runs; parts wait
//     in the spool, and go up in order when it is back. Options.SpoolMax
//     (1 GiB) bounds what waits, over every object: past it the recordings
//     are cut (finished as at a limit, the reason logged; what was recorded
//     before is uploaded when the store is back). Close waits up to
//     Options.FinishTimeout (10 minutes) for the store.
//   - Permanent errors (no such bucket, refused credentials) are found by
//     Open (HeadBucket) before anything is recorded: a *StoreError wrapping
//     ErrNoBucket or ErrAccessDenied.
//   - A recorder killed (SIGKILL, power loss) leaves its spool: the media
//     file up to its last flush (at most 500 ms before the kill) and the
//     manifest of the parts the store took. A live recorder holds an flock
//     on each media file; Recover, called by a recorder started again with
//     the same spool (the command does it when it starts), completes every
//     object whose file is not locked: head part and tail from the spool,
//     the parts between from the store. The object is then the live form
//     (fragmented MP4, MKV without duration, TS; an FLV with the duration
//     and size its tail gives, i.e. finished) holding everything
//     written up to the last flush; one killed after its recording ended
//     (during the finish) becomes the finished file.
//   - Without the spool (the recorder's machine is gone), RecoverStore,
//     on any machine, completes the unfinished multipart uploads under the
//     key's prefix that took no part for a while. Parts are cut before a
//     sync point (MP4: a fragment, which starts at a video keyframe; MKV:
//     a Cluster whose first block is a keyframe; FLV: a video keyframe
//     tag, or any audio tag of a file without video; a part waits up to
//     2 × PartSize for one), and the file's header (its bytes before the
//     first media write: ftyp and moov, EBML header to Tracks, FLV header
//     to the sequence headers; a few KB) goes up with the first part
//     (again if the muxer rewrote it: a late track): the header followed
//     by any run of parts from the second on is a file players decode
//     from its first frame. So every recording becomes a playable object
//     (live form): from its start when its head part went up too (past
//     Options.EarlyHeadAfter, 256 MiB: it goes up once, early, and the
//     finish replaces it; uploading it sooner would break the upload
//     ratio of shorter recordings), else from its second part on (the
//     header followed by the parts; S3 cannot put a few KB in front of
//     parts, so there the parts are completed first and a second upload
//     puts the header and the first 6 MiB, read back, in front of the
//     rest, copied in the store: UploadPartCopy). Either way up to the end
//     of the last part. A TS needs no header: without its head part it
//     is the TS from its second part on. GCS and Azure join parts of any
//     size, so there the head part's media (from the first media write
//     to HeadEnd) goes up as part 1 with the first part, once: the finish
//     sends a new header (the finished MP4's head, the patched MKV/FLV
//     header) as part 0 and keeps part 1, and RecoverStore joins header
//     and parts from the start of the recording.
//
// # Why aws-sdk-go-v2
//
// The client is github.com/aws/aws-sdk-go-v2/service/s3, driving the
// multipart upload itself (CreateMultipartUpload, UploadPart,
// CompleteMultipartUpload, ListMultipartUploads/ListParts): the streaming,
// the spool, the server-side finish and the recovery all need part-level
// control. It reads credentials, region and endpoints exactly as the AWS
// CLI does (profiles with SSO, assume-role and web identity,
// AWS_ENDPOINT_URL(_S3), endpoint_url), which is what users of a cloud
// expect. Its default checksums since 2025 break R2, older MinIO and Ceph,
// so they are set to "when required"; its own retries are off (ours spool
// meanwhile). minio-go v7.4.1 has the same part-level calls and costs less
// (stripped, a program with the calls used here grows 4.1 MB with
// minio-go and 6.8 MB with aws-sdk-go-v2), but reads neither AWS_REGION
// nor AWS_ENDPOINT_URL nor ~/.aws/config profiles. gocloud.dev's blob
// (also gs:// and az://) hides the parts (no unfinished uploads, no
// copy), and brings the GCS and Azure SDKs. Measured on this project's
// 2-core machine: the command grows from 24.7 MB to 37.2 MB (stripped
// 17.4 to 26.5 MB); a cold build of the SDK's packages takes 46 s of CPU
// (91 s wall on the loaded machine); warm builds are unchanged.
//
// # GCS and Azure: the same parts, the store's own way of joining them
//
// Everything above (the spool, parts cut as the muxer writes, the head
// part kept for the finish, retries, recovery) is shared; only the
// requests differ (the backend interface):
//
//   - gs:// (google.golang.org/api/storage/v1): GCS has no S3 multipart
//     upload. A part is an object of its own, .moq-export-parts/KEY/ID/N,
//     and the finish composes the parts into KEY in the store (compose
//     takes 32 sources a call: more are composed 32 at a time into
//     intermediates, then those), then deletes them. An unfinished upload
//     is its part objects: RecoverStore lists them by prefix, and a
//     listing of the bucket (archives, retention) leaves them out.
//     Credentials: Application Default Credentials
//     (GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default
//     login, the metadata server); STORAGE_EMULATOR_HOST or a plain-http
//     ?endpoint= names an emulator (no credentials).
//   - az:// (github.com/Azure/azure-sdk-for-go/sdk/storage/azblob): a
//     part is a block staged on the blob (Put Block, id
//     base64("ID-NNNNNN")), the finish commits the block list: the blob
//     is put together from the blocks the store holds. Staged blocks are
//     invisible until then; RecoverStore lists the container with its
//     uncommitted blobs. Azure cannot delete uncommitted blocks: an
//     aborted upload's go with the blob's next commit, or after 7 days.
//     Credentials: AZURE_STORAGE_CONNECTION_STRING (Azurite's too); else
//     AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN
//     or the SDK's DefaultAzureCredential (environment, workload and
//     managed identity, Azure CLI login); ?endpoint= names the account's
//     blob endpoint (with a connection string: its AccountName and
//     AccountKey sign).
//
// The SDKs' own retries are off (ours spool meanwhile). These are the
// clouds' own libraries because the finish needs compose and block lists,
// which gocloud.dev's blob (v0.47.0) hides behind a streaming writer: it
// would upload the media twice or not finish at all, and its gcsblob and
// azureblob drivers import the clouds' SDKs, so it could only weigh more.
// For GCS the client is Google's generated JSON API client, the one
// cloud.google.com/go/storage is built on, with the same credentials
// (ADC) and endpoints: every call used here is one request either way,
// and the higher-level package would add gRPC, OpenTelemetry and its own
// retries. Measured on this project's machine (stripped): a program
// making only these calls weighs 33.9 MB with cloud.google.com/go/storage
// v1.70.0 and 15.5 MB with the JSON API client; 9.7 MB with azblob
// v1.8.3, 7.8 MB with azidentity (an empty program: 1.2 MB). The command
// grew from 30.7 MB to 44.4 MB stripped (43.1 to 62.9 MB unstripped) and
// its module graph from 108 to 213 modules; with
// cloud.google.com/go/storage it was 61.6 MB and 342 modules. Warm builds
// are unchanged.
//
// Other schemes are refused with a *record.SchemeError (file:// is a
// local path: record.Files).
package objstore
