package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/moq-export/moq-export/internal/testutil/storetest"
)

// TestGCSComposesMoreThan32PartsInRounds: compose takes 32 sources a
// call, so 70 parts are composed into 3 intermediates first; the object
// is the parts in order, and no part object or intermediate is left.
func TestGCSComposesMoreThan32PartsInRounds(t *testing.T) {
	t.Parallel()
	srv := storetest.GCS(t)
	srv.Bucket(t, "compose")
	ctx := context.Background()
	b, err := newGCS(ctx, Location{Scheme: "gs", Bucket: "compose", Endpoint: srv.Endpoint})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := b.create(ctx, "a/x.ts", "video/mp2t")
	var want bytes.Buffer
	var parts []partRec
	for n := int32(1); n <= 70; n++ {
		p := fmt.Appendf(nil, "part %02d;", n)
		want.Write(p)
		body, _ := newBody(bytes.NewReader(p))
		etag, err := b.uploadPart(ctx, "a/x.ts", id, n, body)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, partRec{N: n, Size: int64(len(p)), ETag: etag})
	}
	ups, err := b.uploads(ctx, "a/")
	if err != nil || len(ups) != 1 || ups[0].ID != id || ups[0].Key != "a/x.ts" || len(ups[0].Parts) != 70 {
		t.Fatalf("uploads before the finish: %+v, %v", ups, err)
	}
	if err := b.complete(ctx, "a/x.ts", id, "video/mp2t", parts); err != nil {
		t.Fatal(err)
	}
	if got := srv.Object(t, "compose", "a/x.ts"); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("object %q, want %q", got, want.Bytes())
	}
	left, err := b.listRaw(ctx, "")
	if err != nil || len(left) != 1 || strings.HasPrefix(left[0].Key, partsPrefix) {
		t.Errorf("objects after the finish: %+v, %v", left, err)
	}
}

// TestAGCSCredentialTheTokenEndpointRefusesFailsAtOpen: a service
// account whose key the token endpoint refuses (as Google's answers a
// deleted or revoked key: 400 invalid_grant) fails Open with
// ErrAccessDenied, saying what to check, after one request. The GCS
// emulator checks no credentials, so the refusal comes from a loopback
// stand-in for Google's token endpoint, which the service account's
// token_uri names.
func TestAGCSCredentialTheTokenEndpointRefusesFailsAtOpen(t *testing.T) {
	var asked atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"error":"invalid_grant","error_description":"Invalid JWT Signature."}`)
	}))
	defer tokens.Close()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	sa, _ := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "moq-export-test",
		"private_key_id": "0123456789abcdef",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "recorder@moq-export-test.iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      tokens.URL + "/token",
	})
	file := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(file, sa, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", file)
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	// An https endpoint takes credentials; it is never reached: the token
	// comes first.
	_, err = Open(context.Background(), "gs://rec/x.mp4?endpoint=https://127.0.0.1:9/", Options{SpoolDir: t.TempDir()})
	var se *StoreError
	if !errors.Is(err, ErrAccessDenied) || !errors.As(err, &se) || !se.Permanent() || !strings.Contains(err.Error(), "GOOGLE_APPLICATION_CREDENTIALS") {
		t.Fatalf("Open: %v, want ErrAccessDenied naming GOOGLE_APPLICATION_CREDENTIALS", err)
	}
	if asked.Load() == 0 {
		t.Errorf("the token endpoint was never asked: %v", err)
	}
	t.Logf("%v", err)
}
