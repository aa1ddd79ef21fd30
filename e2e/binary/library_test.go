package binary

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moq-export/moq-export/demo"
	"github.com/moq-export/moq-export/internal/testutil/cmdtest"
	"github.com/moq-export/moq-export/model"
	"github.com/moq-export/moq-export/record"
)

// The command is the flags of package record: for the same options the
// two write the same files.

// packets returns what ffprobe reads of every packet of path: stream
// codec, pts and size, in file order.
func packets(t *testing.T, path string) []string {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "packet=codec_type,pts,size,flags", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var p struct {
		Packets []map[string]any `json:"packets"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	var s []string
	for _, pk := range p.Packets {
		s = append(s, fmt.Sprint(pk["codec_type"], pk["pts"], pk["size"], pk["flags"]))
	}
	return s
}

// fileSet returns the names of the files below dir, sorted.
func fileSet(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	slices.Sort(names)
	return names
}

// TestCommandAndPackageWriteTheSameSegments records one loop of the demo
// with a {n} template and 1 s segments through the binary and through
// record.Recorder: the same files, holding the same packets.
func TestCommandAndPackageWriteTheSameSegments(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe")
	t.Parallel()
	const template = "rec/{broadcast}-{n}.mkv"
	cliDir, libDir := t.TempDir(), t.TempDir()
	r := cmdtest.Run(t, cliDir, "--demo-fast", "--demo-loops", "1", "--segment", "1s", "-o", template)
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}

	bc := model.NewBroadcast("demo")
	go demo.Publish(context.Background(), bc, demo.Options{Loops: 1, KeepGroups: 1 << 20})
	out, err := record.Files(filepath.Join(libDir, template), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Segment: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(context.Background(), record.Local(bc), "demo"); err != nil {
		t.Fatal(err)
	}

	cli, lib := fileSet(t, cliDir), fileSet(t, libDir)
	if strings.Join(cli, " ") != strings.Join(lib, " ") || len(cli) < 4 {
		t.Fatalf("the command wrote %v, the package %v", cli, lib)
	}
	for _, name := range cli {
		a, b := packets(t, filepath.Join(cliDir, name)), packets(t, filepath.Join(libDir, name))
		if strings.Join(a, "\n") != strings.Join(b, "\n") || len(a) == 0 {
			t.Errorf("%s: the command's file holds %d packets, the package's %d, or they differ", name, len(a), len(b))
		}
	}
}

// TestCommandAndPackageFinishTheFilesWhenStopped: Ctrl-C to the command and
// cancelling the package's context both leave numbered segments that are
// all finalized (MKV cues).
func TestCommandAndPackageFinishTheFilesWhenStopped(t *testing.T) {
	cmdtest.NeedTools(t, "ffprobe", "mkvinfo")
	t.Parallel()
	const template = "{broadcast}-{n}.mkv"
	cliDir, libDir := t.TempDir(), t.TempDir()
	cmd, errOut := cmdtest.Start(t, cliDir, "--segment", "1s", "-o", template, "--progress", "always")
	errOut.WaitForMedia(t, 2*time.Second)
	cmd.Process.Signal(os.Interrupt)
	if code := cmdtest.ExitCode(t, cmd, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after Ctrl-C: %s", code, errOut.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	bc := model.NewBroadcast("demo")
	go demo.Publish(ctx, bc, demo.Options{Realtime: true})
	out, err := record.Files(filepath.Join(libDir, template), record.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.New(record.Options{Output: out, Segment: time.Second, ProgressInterval: 50 * time.Millisecond,
		Progress: func(s record.Stats) {
			if s.Media >= 2*time.Second {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Record(ctx, record.Local(bc), "demo"); err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}

	for _, dir := range []string{cliDir, libDir} {
		files := fileSet(t, dir)
		if len(files) < 2 {
			t.Errorf("%s: files %v, want 2 s in 1 s segments", dir, files)
		}
		for i, name := range files {
			if want := fmt.Sprintf("demo-%d.mkv", i); name != want {
				t.Errorf("%s: file %d is %s, want %s", dir, i, name, want)
			}
			path := filepath.Join(dir, name)
			info, err := exec.Command("mkvinfo", "--all", path).Output()
			// Cues are written at Close: a file cut short has none.
			if err != nil || !strings.Contains(string(info), "Cue point") {
				t.Errorf("%s: not finalized (%v)\n%s", path, err, info)
			}
			cmdtest.Decode(t, path)
		}
	}
}
