package record

import (
	"io"
	"time"
)

// RemoteFile is a File that uploads what is written to it while the
// recording runs (an object store: package objstore). What it has
// uploaded cannot be rewritten, so the muxers finish such a file without
// rewriting it: MP4 hands FinishHead the head of the regular MP4 (ftyp,
// moov, mdat header) to put in front of the fragments it wrote; MKV
// leaves its Clusters' sizes unknown and patches only its head, which
// FLV does too (the head stays writable until Close: a RemoteFile holds
// its first part back). TS rewrites nothing.
type RemoteFile interface {
	File
	io.Seeker
	// FinishHead is called by the MP4 muxer at a clean stop: head followed
	// by the bytes written from offset from on is the finished file.
	FinishHead(head []byte, from int64) error
	// Cut reports why the recording must end now (nil: go on), e.g. a
	// spool that is full while the store is away; the recording is then
	// finished as at a limit (see Options.MaxFileBytes). It is asked after
	// every frame, so it must be cheap.
	Cut() error
	// URL names the object ("s3://bucket/key") in FileInfo.URL.
	URL() string
}

// UploadStats account for what an Output that uploads (an object store)
// did: Stats.Upload, the progress line and the command's JSON summary
// carry them.
type UploadStats struct {
	Objects       int64         `json:"objects"`        // objects finished in the store
	BytesUploaded int64         `json:"bytes_uploaded"` // bytes sent in parts and objects that the store took
	BytesWritten  int64         `json:"bytes_written"`  // bytes the muxers wrote to the objects
	Parts         int64         `json:"parts"`          // parts (and single-request objects) the store took
	Retries       int64         `json:"retries"`        // requests tried again after a transient failure
	SpoolBytes    int64         `json:"spool_bytes"`    // bytes in the local spool now, not yet in the store
	Latency       time.Duration `json:"latency_ns"`     // how long the last part took to upload
	Failures      int64         `json:"failures"`       // objects that could not be finished (kept in the spool)
	Cuts          int64         `json:"cuts"`           // recordings cut because too much waited for the store
}

// Uploader is an Output that uploads (an object store); Recorder.Stats
// reports its UploadStats.
type Uploader interface {
	Output
	UploadStats() UploadStats
}
