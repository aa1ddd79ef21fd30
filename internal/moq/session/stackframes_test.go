package session

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// The group readers run on a goroutine of their own per group stream
// (AcceptStreams), which starts with a 2 KiB stack; the runtime copies a
// stack to twice its size whenever a call goes deeper. quic-go's first
// read takes it to 4 KiB once per group. The reader's own frames, from the
// family's stream handler down to hang's decoder, must leave room for
// quic-go's reads under them within those 4 KiB, or the stack is copied a
// second time per group: that is what made BenchmarkEndToEnd
// loopback-quic/audio 25% slower in session 12 (ReadGroup's frame had
// grown to 1,824 bytes with its log lines and errors inlined; see
// litesub's ReadGroup).
//
// The compiler says each function's frame size (go build -gcflags=-S:
// "args=0x.. locals=0x.."), which depends on the code only, not on the
// machine's load: this guard adds them up per reader.

// groupStackBudget bounds the frames (locals, argument area and return
// address) of a group reader's per-frame path. Today's paths take about
// 1.9 KiB; session 12's regression took 3.3 KiB.
const groupStackBudget = 2400

// groupReaders are the per-frame call paths of the group readers, from
// the family's stream handler down to the legacy decoder (the deepest
// packaging on the hot path). A function renamed or split must be
// renamed or added here.
var groupReaders = []struct {
	name  string
	chain []string
}{
	{"moq-lite group stream", []string{
		"internal/moq/lite/litesub.Conn.HandleUni",
		"internal/moq/lite/litesub.Conn.ReadGroup",
		"internal/moq/lite/litesub.Conn.readFrames",
		"internal/moq/session.(*Pump).Feed",
		"internal/hang.(*Decoder).Decode",
		"internal/hang.DecodeLegacy",
	}},
	{"moq-transport subgroup stream", []string{
		"internal/moq/ietf/ietfsub.(*Session).HandleUni",
		"internal/moq/ietf/ietfsub.(*Session).readSubgroup",
		"internal/moq/ietf/ietfsub.(*Session).readObjects",
		"internal/moq/session.(*Pump).Feed",
		"internal/hang.(*Decoder).Decode",
		"internal/hang.DecodeLegacy",
	}},
}

const module = "github.com/moq-export/moq-export/"

// frameSizes compiles the packages of the readers with -S and returns
// each function's frame (locals + argument area + return address), by
// name without the module's prefix.
func frameSizes(t *testing.T) map[string]int {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile the readers with:", err)
	}
	pkgs := []string{"internal/moq/lite/litesub", "internal/moq/ietf/ietfsub", "internal/moq/session", "internal/hang"}
	args := []string{"build", "-o", "/dev/null"}
	for _, p := range pkgs {
		args = append(args, "-gcflags="+module+p+"=-S")
	}
	for _, p := range pkgs[:2] {
		args = append(args, module+p)
	}
	cmd := exec.Command(goTool, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %v: %v\n%.2000s", args, err, out.String())
	}
	text := regexp.MustCompile(`^(\S+) STEXT.* args=(0x[0-9a-f]+) locals=(0x[0-9a-f]+)`)
	sizes := map[string]int{}
	for line := range bytes.Lines(out.Bytes()) {
		// Only the functions' headers (the listing has 200,000 lines).
		if !bytes.HasPrefix(line, []byte(module)) || !bytes.Contains(line, []byte(" STEXT")) {
			continue
		}
		if m := text.FindSubmatch(line[len(module):]); m != nil {
			a, _ := strconv.ParseInt(string(m[2]), 0, 64)
			l, _ := strconv.ParseInt(string(m[3]), 0, 64)
			sizes[string(m[1])] = int(a + l + 8)
		}
	}
	if len(sizes) == 0 {
		t.Fatalf("go build -gcflags=-S printed no function frames:\n%.2000s", out.String())
	}
	return sizes
}

// TestAGroupReadersFramesLeaveRoomForQuicGosReads guards the stack depth
// of the per-group goroutines without timing anything: the frames of
// every group reader's per-frame path add up to no more than
// groupStackBudget.
func TestAGroupReadersFramesLeaveRoomForQuicGosReads(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles four packages")
	}
	sizes := frameSizes(t)
	for _, r := range groupReaders {
		total := 0
		for _, fn := range r.chain {
			n, ok := sizes[fn]
			if !ok {
				t.Fatalf("%s: no frame for %s in the compiler's output: renamed? update groupReaders", r.name, fn)
			}
			total += n
		}
		t.Logf("%s: %d bytes of frames (budget %d)", r.name, total, groupStackBudget)
		if total > groupStackBudget {
			var each []string
			for _, fn := range r.chain {
				each = append(each, fn+" "+strconv.Itoa(sizes[fn]))
			}
			t.Errorf("%s: the per-frame path's frames take %d bytes, over the budget of %d: the per-group goroutine's stack would be copied twice per group. Move what runs once per group (log lines, errors, headers) into functions of their own (//go:noinline). Frames: %q",
				r.name, total, groupStackBudget, each)
		}
	}
}
