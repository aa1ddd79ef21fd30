package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/moq-export/moq-export/internal/cli"
)

// TestIETFListThroughTheCLI: moq-export --list, and --list -b, against
// @moq/net restricted to one moq-transport draft as the publisher: the
// broadcast is discovered (SUBSCRIBE_NAMESPACE answered by PUBLISH_NAMESPACE
// in drafts 14 and 15, which define no NAMESPACE entry) and its renditions
// read from catalog.json.
func TestIETFListThroughTheCLI(t *testing.T) {
	t.Parallel()
	ref := needReference(t)
	for _, d := range ietfDraftsNamed("Draft15", "Draft16", "Draft20") {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			_, cert := ourCert(t)
			m := sampleBroadcast("interop/ietf-list.hang", 2)
			// Each run dials a publisher of its own (it accepts one session).
			run := func(args ...string) string {
				t.Helper()
				pub := ref.start(ctx, t, "publish", "--manifest", m.write(t), "--listen", "127.0.0.1:0",
					"--cert", cert.certFile, "--key", cert.keyFile, "--alpn", d.alpn, "--wait-ms", "60000")
				port := pub.expect(ctx, "listening", nil).Port
				var stdout, stderr bytes.Buffer
				args = append([]string{fmt.Sprintf("moqt://127.0.0.1:%d/", port), "--tls-fingerprint", cert.fingerprint, "--json"}, args...)
				if code := cli.Execute(ctx, args, cli.Env{Stdout: &stdout, Stderr: &stderr}); code != 0 {
					t.Fatalf("moq-export %s: exit %d; stderr:\n%s", strings.Join(args, " "), code, stderr.String())
				}
				if !strings.Contains(stderr.String(), d.version) {
					t.Errorf("moq-export did not run %s; stderr:\n%s", d.version, stderr.String())
				}
				return stdout.String()
			}
			var names []string
			if err := json.Unmarshal([]byte(run("--list")), &names); err != nil || !slices.Contains(names, m.Broadcast) {
				t.Fatalf("--list %v, %v; want %s", names, err, m.Broadcast)
			}
			var rends []struct{ Name, Kind, Codec string }
			if err := json.Unmarshal([]byte(run("--list", "-b", m.Broadcast)), &rends); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rends {
				got = append(got, r.Name+":"+r.Kind)
			}
			slices.Sort(got)
			if fmt.Sprint(got) != "[audio:audio video:video]" {
				t.Fatalf("--list -b: renditions %v", rends)
			}
		})
	}
}
