package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagGroups orders --help: each flag belongs to exactly one group (a test
// checks it), so a new flag is placed by adding its name here.
var flagGroups = []struct {
	title string
	names []string
}{
	{"Output", []string{"output", "format", "overwrite", "no-overwrite", "duration", "segment", "hls-segment-duration", "hls-segment-files", "keep-timestamps", "delay", "max-delay"}},
	{"Selection", []string{"broadcast", "video", "audio", "text", "list", "record-all", "wait"}},
	{"Connection", []string{"token-file", "tls-fingerprint", "tls-insecure", "reconnect-for"}},
	{"Listen (accept publishers instead of dialling a relay)", []string{"listen", "tls-cert", "tls-key", "auth-key", "max-publishers"}},
	{"Object store (-o s3://, gs:// or az://BUCKET/KEY; credentials as each cloud's SDK reads them)", []string{"spool", "spool-max", "recover-uploads"}},
	{"Archive (-f archive -o DIR writes one; an archive DIR or file:// URL is read)", []string{"retention", "from", "to", "follow", "replay-to", "replay"}},
	{"Limits", []string{"timeout", "max-broadcasts", "max-bytes", "min-free"}},
	{"Logging", []string{"progress", "verbose", "quiet", "log-format", "log-time", "json", "summary"}},
	{serviceGroup.title, serviceGroup.names},
	{"Built-in demo (no URL)", []string{"demo-codecs", "demo-simulcast", "demo-late", "demo-container", "demo-loops", "demo-to"}},
}

// groupedFlagUsages is the flags part of --help: the usage lines of fs,
// aligned as one table, under the titles of flagGroups; flags of no group
// (help, version) come last.
func groupedFlagUsages(fs *pflag.FlagSet) string {
	lines := map[string]string{}
	var order []string
	for line := range strings.SplitSeq(strings.TrimRight(fs.FlagUsages(), "\n"), "\n") {
		name := flagOfUsageLine(line)
		if name == "" && len(order) > 0 {
			// A continuation of the previous flag's usage.
			lines[order[len(order)-1]] += "\n" + line
			continue
		}
		lines[name] = line
		order = append(order, name)
	}
	var b strings.Builder
	done := map[string]bool{}
	for _, g := range flagGroups {
		var body []string
		for _, n := range g.names {
			if l, ok := lines[n]; ok {
				body = append(body, l)
				done[n] = true
			}
		}
		if len(body) == 0 {
			continue
		}
		b.WriteString("\n" + g.title + ":\n" + strings.Join(body, "\n") + "\n")
	}
	var rest []string
	for _, n := range order {
		if !done[n] {
			rest = append(rest, lines[n])
		}
	}
	if len(rest) > 0 {
		b.WriteString("\nOther:\n" + strings.Join(rest, "\n") + "\n")
	}
	return strings.TrimPrefix(b.String(), "\n")
}

// flagOfUsageLine returns the long name of the flag a line of
// pflag.FlagUsages describes ("  -b, --broadcast NAME  ..."), or "".
func flagOfUsageLine(line string) string {
	s := strings.TrimLeft(line, " ")
	if strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") {
		_, s, _ = strings.Cut(s, ", ")
	}
	if !strings.HasPrefix(s, "--") {
		return ""
	}
	name, _, _ := strings.Cut(s[2:], " ")
	return name
}

// usageTemplate is cobra's default with the flags in groups.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
  {{rpad .Name .NamePadding }} {{.Short}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

{{if .HasParent}}Flags:
{{.LocalFlags.FlagUsages | trimTrailingWhitespaces}}{{else}}{{groupedFlagUsages .LocalFlags | trimTrailingWhitespaces}}{{end}}{{end}}{{if .HasAvailableInheritedFlags}}

Global Flags:
{{.InheritedFlags.FlagUsages | trimTrailingWhitespaces}}{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`

func init() { cobra.AddTemplateFunc("groupedFlagUsages", groupedFlagUsages) }
