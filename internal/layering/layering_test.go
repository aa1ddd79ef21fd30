package layering

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/moq-export/moq-export"

// pkg is what `go list -deps -json` says of one package of the module.
type pkg struct {
	ImportPath   string
	Imports      []string // direct, non-test
	Deps         []string // transitive, non-test
	TestImports  []string
	XTestImports []string
	Standard     bool
	Module       *struct{ Path string }
}

// short strips the module path: "mux/flv".
func short(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

func inModule(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }

// load lists every package of the module with its imports, tests' too.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", "-test=false", module+"/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs[short(p.ImportPath)] = &p
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages of the module", len(pkgs))
	}
	return pkgs
}

// moduleOnly keeps the module's packages of list, shortened.
func moduleOnly(list []string) []string {
	var out []string
	for _, p := range list {
		if inModule(p) {
			out = append(out, short(p))
		}
	}
	return out
}

// under reports whether p is dir or below it.
func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// testSupport reports whether a package exists for tests only: every
// package under internal/testutil, and nothing else.
func testSupport(name string) bool { return under(name, "internal/testutil") }

// muxers write one container each over the mux contract.
var muxers = []string{"mux/flv", "mux/mkv", "mux/ts", "mux/mp4"}

// tiers ranks the packages of the design note's one-way chain: a package
// never depends on one of a higher tier.
var tiers = []struct {
	tier int
	pkgs []string // a name covers the packages under it
}{
	{0, []string{"model"}},
	{1, []string{"catalog"}},
	{2, []string{"export", "jitter", "subscribe", "mux"}},
	{3, []string{"record"}},
	{4, []string{"internal/cli"}},
	{5, []string{"cmd"}},
}

// tierOf is the tier of package name, or -1.
func tierOf(name string) int {
	for _, t := range tiers {
		for _, p := range t.pkgs {
			if under(name, p) {
				return t.tier
			}
		}
	}
	return -1
}

// processWide are the standard packages that change the whole process
// (debug.FreeOSMemory, SetGCPercent, SetMemoryLimit; signal.Notify):
// design rule 6 leaves them to the command.
var processWide = []string{"runtime/debug", "os/signal"}

// theCommand reports whether a package is the command or a program of
// its own, which may change the process: internal/cli, cmd, tools.
func theCommand(name string) bool {
	return under(name, "internal/cli") || under(name, "cmd") || under(name, "tools")
}

// internalKinds are the folders directly under internal/, by kind (design
// note, #25 item 5): codec and format helpers, the packaging owner, the
// embedded samples, the wire side, the command, small leaves, and test
// support apart. A helper goes into its kind's folder, not loose here.
var internalKinds = []string{
	"internal/codec", "internal/format", "internal/hang", "internal/samples", "internal/moq",
	"internal/cli", "internal/service", "internal/varint", "internal/units", "internal/moqpath",
	"internal/overload", "internal/testutil", "internal/layering",
}

// The design note's rules, as far as they hold after the hang packaging
// moved to internal/hang, how each is encoded and what it leaves out:
//   - "cmd -> cli -> record -> {export, subscribe, mux} -> catalog -> model
//     one way": encoded over those tiers (jitter beside export); packages
//     beside them (archive, objstore, internal/service beside record; the
//     internal helpers, which catalog's init check uses) are not ranked.
//   - lite and ietf never import each other: encoded for everything under
//     internal/moq/lite and internal/moq/ietf (their wire codecs, their
//     publishers litepub and ietfpub, and the subscribers litesub and
//     ietfsub (moq-transport's with its session), which import the core
//     and never subscribe).
//   - the session core imports neither protocol: encoded for
//     internal/moq/session, which holds the subscribed tracks (their run,
//     retries, resume and gap fill), the subscription and its lifecycle,
//     the group pump and the group streams' order, FETCH, backfill and the
//     publisher's loops; each family implements its seam (session.Family).
//   - only internal/hang decodes payloads: the protocol code calls it, but
//     subscribe still exposes Unpacker (the archive's inverse of
//     Options.Objects) over it; encoded as "only hang and catalog read
//     fMP4, only the protocol side (subscribe, the core, whose publish
//     pump encodes what our publishers send with it, and the families'
//     subscribers, which hand it hang.Objects) and archive use hang".
var rules = []struct {
	name  string
	check func(pkgs map[string]*pkg) []string // violations
}{
	{"internal/ is sorted by kind: every package under it is in one of the kinds' folders", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name := range pkgs {
			if !under(name, "internal") || slices.ContainsFunc(internalKinds, func(k string) bool { return under(name, k) }) {
				continue
			}
			bad = append(bad, name+" is loose under internal/")
		}
		return bad
	}},
	{"imports run one way: cmd -> internal/cli -> record -> {export, jitter, subscribe, mux} -> catalog -> model", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			tn := tierOf(name)
			if tn < 0 {
				continue
			}
			for _, d := range moduleOnly(p.Deps) {
				if td := tierOf(d); td > tn {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"libraries leave process-wide state alone: only the command (internal/cli, cmd, tools) imports runtime/debug or os/signal", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if theCommand(name) || testSupport(name) {
				continue
			}
			for _, d := range p.Imports {
				if slices.Contains(processWide, d) {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"model imports nothing of the module", func(pkgs map[string]*pkg) []string {
		return moduleOnly(pkgs["model"].Deps)
	}},
	{"export never imports subscribe, nor subscribe export", func(pkgs map[string]*pkg) []string {
		var bad []string
		for _, d := range moduleOnly(pkgs["export"].Deps) {
			if under(d, "subscribe") {
				bad = append(bad, "export -> "+d)
			}
		}
		for _, d := range moduleOnly(pkgs["subscribe"].Deps) {
			if under(d, "export") || under(d, "mux") || under(d, "record") || under(d, "jitter") {
				bad = append(bad, "subscribe -> "+d)
			}
		}
		return bad
	}},
	{"muxers import only the mux contract and codec helpers", func(pkgs map[string]*pkg) []string {
		allowed := []string{"mux", "mux/internal/muxbase", "internal/codec/h26x", "internal/codec/codecconf", "internal/format/webvtt"}
		var bad []string
		for _, m := range muxers {
			for _, d := range moduleOnly(pkgs[m].Imports) {
				if !slices.Contains(allowed, d) {
					bad = append(bad, m+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"only internal/hang and catalog (an init's validity) read fMP4 (test support may build it)", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if name == "internal/hang" || name == "catalog" || under(name, "internal/format/cmaf") || testSupport(name) {
				continue
			}
			if slices.Contains(moduleOnly(p.Imports), "internal/format/cmaf") {
				bad = append(bad, name+" -> internal/format/cmaf")
			}
		}
		return bad
	}},
	{"only the protocol side (subscribe, the session core's pumps, a family's subscriber handing its objects over) and the archive use internal/hang; a family's publisher hands over bytes only", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if under(name, "subscribe") || under(name, "internal/moq/session") ||
				under(name, "internal/moq/lite/litesub") || under(name, "internal/moq/ietf/ietfsub") ||
				under(name, "archive") || name == "internal/hang" {
				continue
			}
			if slices.Contains(moduleOnly(p.Imports), "internal/hang") {
				bad = append(bad, name+" -> internal/hang")
			}
		}
		return bad
	}},
	{"test support is imported by tests only", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if testSupport(name) {
				continue
			}
			for _, d := range moduleOnly(p.Deps) {
				if testSupport(d) {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"only internal/moq/transport imports quic-go and webtransport-go (tests may play raw peers)", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if name == "internal/moq/transport" {
				continue
			}
			for _, d := range p.Imports {
				if strings.HasPrefix(d, "github.com/quic-go/") {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"the moq-lite and moq-transport packages never import each other, nor the transport either", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			for _, pair := range [][2]string{
				{"internal/moq/lite", "internal/moq/ietf"}, {"internal/moq/ietf", "internal/moq/lite"},
				{"internal/moq/transport", "internal/moq/lite"}, {"internal/moq/transport", "internal/moq/ietf"},
			} {
				if !under(name, pair[0]) {
					continue
				}
				for _, d := range moduleOnly(p.Deps) {
					if under(d, pair[1]) {
						bad = append(bad, name+" -> "+d)
					}
				}
			}
		}
		return bad
	}},
	{"the session core imports neither protocol family, nor the transport, nor subscribe", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if !under(name, "internal/moq/session") {
				continue
			}
			for _, d := range moduleOnly(p.Deps) {
				for _, no := range []string{"internal/moq/lite", "internal/moq/ietf", "internal/moq/transport", "subscribe"} {
					if under(d, no) {
						bad = append(bad, name+" -> "+d)
					}
				}
			}
		}
		return bad
	}},
	{"a family's packages (its wire, publisher and subscriber) never import the public facade (subscribe) they sit behind", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if !under(name, "internal/moq/lite") && !under(name, "internal/moq/ietf") {
				continue
			}
			for _, d := range moduleOnly(p.Deps) {
				if under(d, "subscribe") {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"the wire codecs reach the transport only through its ALPN table, a leaf", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if name == "internal/moq/transport/alpn" {
				for _, d := range moduleOnly(p.Deps) {
					bad = append(bad, name+" -> "+d)
				}
				continue
			}
			if !under(name, "internal/moq/lite") && !under(name, "internal/moq/ietf") {
				continue
			}
			for _, d := range moduleOnly(p.Deps) {
				if under(d, "internal/moq/transport") && d != "internal/moq/transport/alpn" {
					bad = append(bad, name+" -> "+d)
				}
			}
		}
		return bad
	}},
	{"only internal/testutil/browsertest imports chromedp, tests included", func(pkgs map[string]*pkg) []string {
		var bad []string
		for name, p := range pkgs {
			if name == "internal/testutil/browsertest" {
				continue
			}
			for _, list := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
				for _, d := range list {
					if strings.HasPrefix(d, "github.com/chromedp/") {
						bad = append(bad, fmt.Sprintf("%s -> %s", name, d))
					}
				}
			}
		}
		return bad
	}},
}

func TestImportsKeepTheLayeringRules(t *testing.T) {
	pkgs := load(t)
	for _, need := range append([]string{"model", "catalog", "record", "internal/cli", "cmd/moq-export", "internal/samples", "internal/codec/h26x", "internal/codec/codecconf", "internal/format/cmaf", "internal/format/webvtt", "export", "subscribe", "internal/hang", "internal/testutil/browsertest", "internal/moq/transport", "internal/moq/lite/wire", "internal/moq/ietf", "internal/moq/transport/alpn", "internal/moq/session", "internal/moq/lite/litepub", "internal/moq/ietf/ietfpub", "internal/moq/ietf/ietfsub", "internal/moq/lite/litesub"}, muxers...) {
		if pkgs[need] == nil {
			t.Fatalf("package %s not listed: the rules name a package that moved; update them", need)
		}
	}
	for _, r := range rules {
		t.Run(strings.ReplaceAll(r.name, " ", "_"), func(t *testing.T) {
			bad := r.check(pkgs)
			slices.Sort(bad)
			for _, b := range bad {
				t.Errorf("%s: %s", r.name, b)
			}
		})
	}
}

// TestEveryRuleCatchesTheImportItForbids feeds each rule a module that
// breaks it: a rule that cannot fail checks nothing.
func TestEveryRuleCatchesTheImportItForbids(t *testing.T) {
	m := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, module+"/"+n)
		}
		return out
	}
	base := func() map[string]*pkg {
		pkgs := map[string]*pkg{}
		for _, n := range append([]string{"model", "export", "subscribe", "internal/hang", "internal/testutil/browsertest", "catalog", "internal/moq/ietf", "internal/moq/session", "internal/moq/lite/litepub", "internal/moq/lite/litesub"}, muxers...) {
			pkgs[n] = &pkg{ImportPath: module + "/" + n}
		}
		return pkgs
	}
	breaks := []func(map[string]*pkg){
		func(p map[string]*pkg) { p["internal/h26x"] = &pkg{ImportPath: module + "/internal/h26x"} },
		func(p map[string]*pkg) { p["catalog"].Deps = m("model", "mux") },
		func(p map[string]*pkg) { p["export"].Imports = []string{"runtime/debug"} },
		func(p map[string]*pkg) { p["model"].Deps = m("catalog") },
		func(p map[string]*pkg) { p["export"].Deps = m("subscribe") },
		func(p map[string]*pkg) { p["mux/ts"].Imports = m("model") },
		func(p map[string]*pkg) { p["export"].Imports = m("internal/format/cmaf") },
		func(p map[string]*pkg) { p["export"].Imports = m("internal/hang") },
		func(p map[string]*pkg) { p["catalog"].Deps = m("internal/testutil/mediatest") },
		func(p map[string]*pkg) { p["subscribe"].Imports = []string{"github.com/quic-go/webtransport-go"} },
		func(p map[string]*pkg) { p["internal/moq/ietf"].Deps = m("internal/varint", "internal/moq/lite/wire") },
		func(p map[string]*pkg) {
			p["internal/moq/session"].Deps = m("internal/varint", "internal/moq/lite/wire")
		},
		func(p map[string]*pkg) {
			p["internal/moq/lite/litesub"].Deps = m("internal/moq/session", "internal/moq/lite/litepub", "subscribe")
		},
		func(p map[string]*pkg) {
			p["internal/moq/ietf"].Deps = m("internal/moq/transport/alpn", "internal/moq/transport")
		},
		func(p map[string]*pkg) { p["export"].XTestImports = []string{"github.com/chromedp/chromedp"} },
	}
	if len(breaks) != len(rules) {
		t.Fatalf("%d rules, %d breaks: give each rule one", len(rules), len(breaks))
	}
	for i, r := range rules {
		if bad := r.check(base()); len(bad) > 0 {
			t.Errorf("%s: a clean module breaks it: %v", r.name, bad)
		}
		pkgs := base()
		breaks[i](pkgs)
		if bad := r.check(pkgs); len(bad) == 0 {
			t.Errorf("%s: not caught", r.name)
		}
	}
}
