package objstore_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/mediatest"
	"github.com/moq-export/moq-export/internal/testutil/storetest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/objstore"
	"github.com/moq-export/moq-export/record"
)

// cloud is a store other than S3, served by its emulator: Google Cloud
// Storage (fake-gcs-server) or Azure Blob Storage (Azurite).
type cloud struct {
	scheme string
	srv    *storetest.Server
}

var cloudKinds = []struct{ scheme, kind string }{{"gs", "gcs"}, {"az", "azure"}}

func startCloud(t *testing.T, kind string) cloud {
	t.Helper()
	if kind == "gcs" {
		return cloud{"gs", storetest.GCS(t)}
	}
	return cloud{"az", storetest.Azure(t)}
}

// url names key of bucket on the emulator (its endpoint in the query).
func (c cloud) url(bucket, key string) string {
	return c.scheme + "://" + bucket + "/" + key + "?endpoint=" + c.srv.Endpoint
}

// objectFile writes the object's bytes, as the store serves them, to a
// file for the tools.
func (c cloud) objectFile(t *testing.T, bucket, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), filepath.Base(key))
	if err := os.WriteFile(p, c.srv.Object(t, bucket, key), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// run is a key prefix of this run of the test: the emulators live as
// long as the test binary, which -count runs the tests again in.
func run(t *testing.T) string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:]) + "/"
}

func openCloud(t *testing.T, url string, o objstore.Options) *objstore.Output {
	t.Helper()
	if o.SpoolDir == "" {
		o.SpoolDir = t.TempDir()
	}
	o.Logger = quiet
	out, err := objstore.Open(context.Background(), url, o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEachFormatRecordedToGCSAndAzureDecodesFromTheObjectsBytes: a short
// recording (one request from the spool) of each format into gs:// and
// az:// is an object ffmpeg decodes cleanly with every frame published,
// its FileInfo names its URL and size, and the spool is empty after.
func TestEachFormatRecordedToGCSAndAzureDecodesFromTheObjectsBytes(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "short")
			for _, f := range []record.Format{record.MP4, record.MKV, record.TS, record.FLV} {
				t.Run(string(f), func(t *testing.T) {
					t.Parallel()
					bc, published := publish(t, nil, 1, 0)
					spool, pre := t.TempDir(), run(t)
					out := openCloud(t, c.url("short", pre+"{broadcast}"+f.Ext()), objstore.Options{SpoolDir: spool})
					_, files := recordInto(t, context.Background(), out, f, record.Local(bc))
					want := c.scheme + "://short/" + pre + "demo" + f.Ext()
					if len(files) != 1 || files[0].URL != want || files[0].Frames != published {
						t.Fatalf("files %+v, want %s with %d frames", files, want, published)
					}
					p := c.objectFile(t, "short", pre+"demo"+f.Ext())
					if st, _ := os.Stat(p); st.Size() != files[0].Size {
						t.Errorf("object of %d bytes, FileInfo says %d", st.Size(), files[0].Size)
					}
					mediatest.DecodeClean(t, p)
					if n := len(mediatest.Probe(t, p).Packets); int64(n) != published {
						t.Errorf("ffprobe reads %d packets, %d were published", n, published)
					}
					if left, _ := os.ReadDir(spool); len(left) != 0 {
						t.Errorf("spool keeps %d files after the object is finished", len(left))
					}
				})
			}
		})
	}
}

// TestLargeRecordingsInGCSAndAzureAreFinishedFromUploadedParts: past two
// parts a recording goes up while it is recorded (GCS: part objects;
// Azure: staged blocks) and the finish puts the object together in the
// store (compose; commit of the block list): bytes uploaded / bytes
// recorded <= 1.05, the MP4 has its moov in front, the MKV its Cues, and
// each equals a local recording of the same broadcast frame for frame.
// No part object is left behind.
func TestLargeRecordingsInGCSAndAzureAreFinishedFromUploadedParts(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "large")
			for _, f := range []record.Format{record.MP4, record.MKV} {
				t.Run(string(f), func(t *testing.T) {
					t.Parallel()
					bc, published := publish(t, nil, 7, 16_000_000)
					pre := run(t)
					out := openCloud(t, c.url("large", pre+"{broadcast}"+f.Ext()), objstore.Options{})
					rec, files := recordInto(t, context.Background(), out, f, record.Local(bc))
					local, _ := record.Files(filepath.Join(t.TempDir(), "local"+f.Ext()), record.FileOptions{})
					_, lfiles := recordInto(t, context.Background(), local, f, record.Local(bc))
					u := rec.Stats().Upload
					if u.BytesWritten < 50<<20 {
						t.Fatalf("recorded %d bytes: the test needs 50 MiB", u.BytesWritten)
					}
					ratio := float64(u.BytesUploaded) / float64(u.BytesWritten)
					t.Logf("%s %s: %d bytes recorded, %d uploaded in %d requests: ratio %.4f; object %d bytes", c.scheme, f, u.BytesWritten, u.BytesUploaded, u.Parts, ratio, files[0].Size)
					if ratio > 1.05 || u.Parts < 3 || u.SpoolBytes != 0 || u.Objects != 1 {
						t.Errorf("upload ratio %.4f (want <= 1.05), %d requests (want parts), %d bytes left in the spool", ratio, u.Parts, u.SpoolBytes)
					}
					p := c.objectFile(t, "large", pre+"demo"+f.Ext())
					if st, _ := os.Stat(p); st.Size() != files[0].Size {
						t.Errorf("object of %d bytes, FileInfo says %d", st.Size(), files[0].Size)
					}
					mediatest.DecodeClean(t, p)
					if n := sameFrames(t, p, lfiles[0].Path); int64(n) != published {
						t.Errorf("%d frames, %d published", n, published)
					}
					b, _ := os.ReadFile(p)
					switch f {
					case record.MP4:
						if boxes := topBoxes(b); len(boxes) < 3 || boxes[0] != "ftyp" || boxes[1] != "moov" || boxes[2] != "mdat" {
							t.Errorf("top-level boxes %v, want ftyp, moov, mdat (fast start)", boxes)
						}
					case record.MKV:
						if !bytes.Contains(b[len(b)-len(b)/50:], []byte{0x1c, 0x53, 0xbb, 0x6b}) {
							t.Error("no Cues at the end")
						}
					}
					// Nothing of the upload is left to complete.
					if left, err := out.RecoverStore(context.Background(), 0); err != nil || len(left) != 0 {
						t.Errorf("RecoverStore after the finish: %+v, %v", left, err)
					}
				})
			}
		})
	}
}

// TestAGCSOrAzureRecorderKilledAndStartedAgainCompletesItsObject: SIGKILL
// while parts go up, then Recover from the spool: the object plays and
// holds everything up to ~1 s before the kill.
func TestAGCSOrAzureRecorderKilledAndStartedAgainCompletesItsObject(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "killed")
			spool, pre := t.TempDir(), run(t)
			media, partsAt := killAfterAPart(t, childCommand(t, "record", c.url("killed", pre+"{broadcast}.mp4"), spool, "mp4"))
			out := openCloud(t, c.url("killed", pre+"{broadcast}.mp4"), objstore.Options{SpoolDir: spool})
			got, err := out.Recover(context.Background())
			if err != nil || len(got) != 1 || got[0].URL != c.scheme+"://killed/"+pre+"demo.mp4" || got[0].Finished {
				t.Fatalf("Recover: %+v, %v", got, err)
			}
			p := c.objectFile(t, "killed", pre+"demo.mp4")
			mediatest.DecodeClean(t, p)
			last := lastPTS(t, p)
			t.Logf("%s: killed at %.2f s of media (a part had gone up at %.2f s); the recovered object reaches %.2f s", c.scheme, media, partsAt, last)
			if last < media-1 {
				t.Errorf("the recovered object ends at %.2f s, the recorder had written %.2f s", last, media)
			}
			if left, _ := filepath.Glob(filepath.Join(spool, "*")); len(left) != 0 {
				t.Errorf("spool keeps %v", left)
			}
		})
	}
}

func lastPTS(t *testing.T, p string) float64 {
	t.Helper()
	last := 0.0
	for _, pk := range mediatest.Probe(t, p).Packets {
		if v, err := strconv.ParseFloat(pk.PTSTime, 64); err == nil && v > last {
			last = v
		}
	}
	return last
}

// TestAGCSOrAzureRecordingWhoseSpoolIsLostIsCompletedFromTheStore: the
// recorder and its spool are gone; its head part had gone up early
// (EarlyHeadAfter, here 2 parts), so RecoverStore completes the upload
// from the parts in the store (GCS part objects; Azure uncommitted
// blocks) into a playable object.
func TestAGCSOrAzureRecordingWhoseSpoolIsLostIsCompletedFromTheStore(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "lost")
			spool, pre := t.TempDir(), run(t)
			cmd := childCommand(t, "record", c.url("lost", pre+"{broadcast}.mp4"), spool, "mp4", strconv.Itoa(2*objstore.DefaultPartSize))
			stdout, _ := cmd.StdoutPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			var media float64
			done := false
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var parts int
				if _, err := fmt.Sscanf(sc.Text(), "media %f parts %d", &media, &parts); err != nil {
					t.Fatalf("child: %s", sc.Text())
				}
				if parts >= 3 { // parts 2 and 3, and the head part
					done = true
					break
				}
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			if !done {
				t.Fatal("the child ended before its parts went up")
			}
			os.RemoveAll(spool)
			out := openCloud(t, c.url("lost", pre+"{broadcast}.mp4"), objstore.Options{})
			got, err := out.RecoverStore(context.Background(), 0)
			if err != nil || len(got) != 1 || got[0].URL != c.scheme+"://lost/"+pre+"demo.mp4" {
				t.Fatalf("RecoverStore: %+v, %v", got, err)
			}
			p := c.objectFile(t, "lost", pre+"demo.mp4")
			if st, _ := os.Stat(p); st.Size() != got[0].Size || st.Size() < 3*objstore.DefaultPartSize {
				t.Errorf("object of %d bytes, RecoverStore says %d; 3 parts of %d went up", st.Size(), got[0].Size, objstore.DefaultPartSize)
			}
			mediatest.DecodeClean(t, p)
			last := lastPTS(t, p)
			t.Logf("%s: killed at %.2f s of media with 3 parts in the store; the object from the store alone reaches %.2f s", c.scheme, media, last)
			if last < 10 {
				t.Errorf("the object ends at %.2f s", last)
			}
			if again, err := out.RecoverStore(context.Background(), 0); err != nil || len(again) != 0 {
				t.Errorf("second RecoverStore: %+v, %v", again, err)
			}
		})
	}
}

// TestAGCSOrAzureRecordingUnder256MiBWhoseSpoolIsLostIsCompletedFromItsParts:
// GCS and Azure join parts of any size, so the head part's media goes up
// as part 1 with the first part (once: the finish puts a new header in
// front of it), and a recording whose spool is lost becomes its header
// (GCS: part object 0; Azure: block 0) composed or committed in front of
// every part: the recording from its start, frame for frame; nothing of
// the upload is left (GCS: no part object).
func TestAGCSOrAzureRecordingUnder256MiBWhoseSpoolIsLostIsCompletedFromItsParts(t *testing.T) {
	t.Parallel()
	for _, ck := range []struct{ scheme, kind, format string }{{"gs", "gcs", "mkv"}, {"az", "azure", "mp4"}} {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "lost")
			pre := run(t)
			key := pre + "demo." + ck.format
			object := recoverLostSpool(t, ck.format, c.url("lost", pre+"{broadcast}."+ck.format), true,
				func() *objstore.Output {
					return openCloud(t, c.url("lost", pre+"{broadcast}."+ck.format), objstore.Options{})
				},
				func() string { return c.objectFile(t, "lost", key) })
			if object != ck.scheme+"://lost/"+key {
				t.Errorf("recovered %s", object)
			}
			if ck.scheme == "gs" {
				if left := gcsList(t, c, "lost", ".moq-export-parts/"+pre); len(left) != 0 {
					t.Errorf("left in the store: %v", left)
				}
			}
		})
	}
}

// gcsList lists the names under prefix in bucket of the GCS emulator.
func gcsList(t *testing.T, c cloud, bucket, prefix string) []string {
	t.Helper()
	resp, err := http.Get(c.srv.Endpoint + "/storage/v1/b/" + bucket + "/o?prefix=" + url.QueryEscape(prefix))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Items []struct {
			Name string `json:"name"`
		} `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil || resp.StatusCode != 200 {
		t.Fatalf("listing %s: %s, %v", prefix, resp.Status, err)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Name)
	}
	return names
}

// TestAGCSOrAzureOutageLosesNothing: the store goes away (refused
// connections, open ones cut) for 5 s while a recording uploads; parts
// wait in the spool and go up in order when it is back, and the object
// equals a local recording of the same broadcast frame for frame.
func TestAGCSOrAzureOutageLosesNothing(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			c.srv.Bucket(t, "outage")
			px := storetest.NewProxy(t, c.srv.Addr)
			endpoint := "http://" + px.Addr
			if c.scheme == "az" {
				endpoint += "/" + storetest.AzureAccount
			}
			pre := run(t)
			out := openCloud(t, c.scheme+"://outage/"+pre+"{broadcast}.mp4?endpoint="+endpoint, objstore.Options{EarlyHeadAfter: 2 * objstore.DefaultPartSize})
			bc := model.NewBroadcast("demo")
			hold := make(chan struct{})
			var published atomic.Int64
			pubDone := make(chan error, 1)
			go func() {
				pubDone <- demo.Publish(context.Background(), bc, demo.Options{Realtime: true, Loops: 5, VideoBitrate: 16_000_000, KeepGroups: 1 << 20, Hold: hold, Published: &published})
			}()
			rec, err := record.New(record.Options{Output: out, Format: record.MP4, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			var stoppedAt, backAt time.Time
			var spoolPeak int64
			go func() {
				for rec.Stats().Tracks < 2 {
					time.Sleep(10 * time.Millisecond)
				}
				close(hold)
				for rec.Stats().Upload.BytesWritten < objstore.DefaultPartSize+1<<20 {
					time.Sleep(20 * time.Millisecond)
				}
				px.Stop()
				stoppedAt = time.Now()
				for {
					u := rec.Stats().Upload
					spoolPeak = max(spoolPeak, u.SpoolBytes)
					// Back after 5 s, once a request failed on it.
					if time.Since(stoppedAt) >= 5*time.Second && u.Retries > 0 || time.Since(stoppedAt) > time.Minute {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
				px.Start(t)
				backAt = time.Now()
			}()
			if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
				t.Fatal(err)
			}
			if err := <-pubDone; err != nil {
				t.Fatal(err)
			}
			if backAt.IsZero() {
				t.Fatal("the recording ended before the outage was over")
			}
			u := rec.Stats().Upload
			t.Logf("%s: store away %.1f s; spool peaked at %d bytes; %d requests retried; ratio %.4f", c.scheme, backAt.Sub(stoppedAt).Seconds(), spoolPeak, u.Retries, float64(u.BytesUploaded)/float64(u.BytesWritten))
			if u.Retries == 0 || u.Objects != 1 || u.SpoolBytes != 0 || u.Failures != 0 {
				t.Errorf("upload stats %+v: want retries, one object, an empty spool", u)
			}
			local, _ := record.Files(filepath.Join(t.TempDir(), "local.mp4"), record.FileOptions{})
			_, lfiles := recordInto(t, context.Background(), local, record.MP4, record.Local(bc))
			p := c.objectFile(t, "outage", pre+"demo.mp4")
			mediatest.DecodeClean(t, p)
			if n := sameFrames(t, p, lfiles[0].Path); int64(n) != published.Load() {
				t.Errorf("%d frames in the object, %d published", n, published.Load())
			}
		})
	}
}

// TestAMissingGCSBucketOrAzureContainerFailsAtOpen: a missing bucket is
// ErrNoBucket, and (Azure; the GCS emulator checks no credentials) a
// wrong account key ErrAccessDenied, both before anything is recorded.
func TestAMissingGCSBucketOrAzureContainerFailsAtOpen(t *testing.T) {
	t.Parallel()
	for _, ck := range cloudKinds {
		t.Run(ck.scheme, func(t *testing.T) {
			t.Parallel()
			c := startCloud(t, ck.kind)
			spool := t.TempDir()
			_, err := objstore.Open(context.Background(), c.url("nope", "x.mp4"), objstore.Options{SpoolDir: spool})
			if !errors.Is(err, objstore.ErrNoBucket) {
				t.Errorf("missing bucket: %v, want ErrNoBucket", err)
			}
			if c.scheme == "az" {
				c.srv.Bucket(t, "denied")
				cmd := childCommand(t, "open", c.url("denied", "x.mp4"), spool)
				cmd.Env = append(cmd.Env, "AZURE_STORAGE_CONNECTION_STRING=AccountName="+storetest.AzureAccount+";AccountKey=bm90LXRoZS1rZXk=")
				b, _ := cmd.CombinedOutput()
				if !bytes.Contains(b, []byte("403")) || !bytes.Contains(b, []byte("refused the credentials")) {
					t.Errorf("wrong key: %s", b)
				}
			}
			if left, _ := os.ReadDir(spool); len(left) != 0 {
				t.Errorf("the spool got %d files", len(left))
			}
		})
	}
}
