package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestEveryFlagIsInOneHelpGroup keeps --help complete: a flag added
// without a place in flagGroups, or placed twice, fails here.
func TestEveryFlagIsInOneHelpGroup(t *testing.T) {
	cmd := newCommand(&Config{}, func() error { return nil })
	seen := map[string]string{}
	for _, g := range flagGroups {
		for _, n := range g.names {
			if other, ok := seen[n]; ok {
				t.Errorf("--%s is in the groups %q and %q", n, other, g.title)
			}
			seen[n] = g.title
			if cmd.Flags().Lookup(n) == nil {
				t.Errorf("group %q names --%s, which is no flag", g.title, n)
			}
		}
	}
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := seen[f.Name]; !ok && !f.Hidden {
			t.Errorf("--%s is in no group of flagGroups: --help would list it under Other", f.Name)
		}
	})
}

// TestHelpNamesEveryContainerAndGroupsTheFlags reads --help as a newcomer
// does: the four containers in its first line, the flags under their
// group titles in order, and value placeholders that are types or words
// in capitals, not pieces of a sentence.
func TestHelpNamesEveryContainerAndGroupsTheFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := Execute(context.Background(), []string{"--help"}, Env{Stdout: &stdout, Stderr: &stderr}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	help := stdout.String()
	first, _, _ := strings.Cut(help, "\n\n")
	for _, c := range []string{"FLV", "Matroska/WebM", "MPEG-TS", "MP4"} {
		if !strings.Contains(first, c) {
			t.Errorf("the first paragraph of --help does not name %s:\n%s", c, first)
		}
	}
	at := 0
	for _, g := range []string{"\nOutput:\n", "\nSelection:\n", "\nConnection:\n", "\nListen", "\nLimits:\n", "\nLogging:\n", "\nBuilt-in demo", "\nOther:\n"} {
		i := strings.Index(help[at:], g)
		if i < 0 {
			t.Fatalf("--help has no group %q after offset %d:\n%s", strings.TrimSpace(g), at, help)
		}
		at += i + len(g)
	}
	for _, want := range []string{"--demo-container string ", "-o, --output PATH ", "--max-bytes SIZE "} {
		if !strings.Contains(help, want) {
			t.Errorf("--help does not show %q", want)
		}
	}
	if strings.Contains(help, "--demo-container moq") {
		t.Error("--demo-container's placeholder is taken from its usage text")
	}
	// The demo flags come under their own title, after Logging.
	demo := help[strings.Index(help, "\nBuilt-in demo"):]
	if !strings.Contains(demo, "--demo-codecs") || strings.Contains(help[:strings.Index(help, "\nBuilt-in demo")], "--demo-") {
		t.Error("the --demo- flags are not all under the demo group")
	}
}

// TestCountsSaySingularForOne: "1 frame", "2 frames", "0 files".
func TestCountsSaySingularForOne(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 frames"}, {1, "1 frame"}, {2, "2 frames"}} {
		if got := count(c.n, "frame", "frames"); got != c.want {
			t.Errorf("count(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
