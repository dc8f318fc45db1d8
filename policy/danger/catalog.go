package danger

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Entry is one catalogued flag or subcommand of a known CLI, with the
// words of the tool's own help it was taken from.
type Entry struct {
	// CLI is the binary's base name ("git", "aws").
	CLI string
	// Subcommand is the path the entry holds under, as a prefix: nil holds
	// under every path, ["auth"] under "auth login" and "auth token".
	Subcommand []string
	// Root limits a flag entry to the bare tool (subcommand []): a global
	// option that counts only before any subcommand (git's -c), while the
	// same letters after one mean something else (git log -c).
	Root bool
	// Flag is the flag ("--endpoint-url", "-c"); "" for an entry about the
	// subcommand itself (gh auth token).
	Flag string
	// Classes are what the flag or subcommand can do; none marks a flag a
	// generic pattern would catch that this CLI uses harmlessly.
	Classes Classes
	// Why says, in one line, what the tool does with it.
	Why string
	// Source is the file under testdata holding the help text.
	Source string
	// Quote is the help's words the entry rests on, as they stand there
	// (runs of white space compare as one blank).
	Quote string
}

// Pattern is a generic flag name pattern, for CLIs the catalog does not
// know (and known ones it does not list otherwise).
type Pattern struct {
	// Name is the flag, a prefix ending in "*" ("--endpoint*") or a
	// suffix after "--*" ("--*-file").
	Name string
	// Classes are what a flag of that name can usually do.
	Classes Classes
	// Why says why the name is caught.
	Why string
	// Over names the patterns this one wins over: when both match a flag,
	// only this one counts (--output-file writes, though --*-file reads).
	// Nil wins over none.
	Over []string
}

// Matches reports whether flag, without any "=value", has the name.
func (p Pattern) Matches(flag string) bool {
	switch {
	case strings.HasPrefix(p.Name, "--*"):
		return strings.HasPrefix(flag, "--") && strings.HasSuffix(flag, p.Name[3:]) && len(flag) > len(p.Name)-1
	case strings.HasSuffix(p.Name, "*"):
		return strings.HasPrefix(flag, p.Name[:len(p.Name)-1])
	}
	return flag == p.Name
}

// Entries returns the known CLIs' entries.
func Entries() []Entry { return slices.Clone(entries) }

// Patterns returns the generic name patterns.
func Patterns() []Pattern { return slices.Clone(patterns) }

// Known reports whether the catalog has entries for cli.
func Known(cli string) bool {
	return slices.ContainsFunc(entries, func(e Entry) bool { return e.CLI == cli })
}

// CLI names the catalog's CLI for a configured tool. It tries, in order:
// the binary's base name; the base name of the file it is a symlink to
// (/opt/bin/g -> /usr/bin/git is git); each of those without a version
// suffix (git-2.39, kubectl1.30, psql15, aws2); the tool's key. The first
// the catalog knows wins; when none is known, the binary's base name (or
// the key, with no binary). A stripped name counts only when the catalog
// knows it, so an unknown name never turns into a known one by chance.
func CLI(toolKey, binary string) string {
	if binary == "" {
		return toolKey
	}
	base := filepath.Base(binary)
	names := []string{base}
	if real, err := filepath.EvalSymlinks(binary); err == nil {
		names = append(names, filepath.Base(real))
	}
	for _, n := range names {
		if Known(n) {
			return n
		}
	}
	for _, n := range names {
		if m := versionSuffix.FindStringSubmatch(n); m != nil && m[1] != "" && Known(m[1]) {
			return m[1]
		}
	}
	if Known(toolKey) {
		return toolKey
	}
	return base
}

// versionSuffix splits a versioned binary name from its version:
// git-2.39, git_2, kubectl1.30, kubectl-v1.30, psql15, aws2.
var versionSuffix = regexp.MustCompile(`^(.*?)[-_.]?v?[0-9][0-9.]*$`)

// gcloudTracks are gcloud's release tracks: gcloud alpha, beta and
// preview hold the same command groups as gcloud itself, in earlier
// versions (gcloud help: "(ALPHA) Alpha versions of gcloud commands.",
// "(BETA) Beta versions of gcloud commands.", "(PREVIEW) Preview versions
// of gcloud commands.", testdata/gcloud_help.txt). gcloud beta auth
// print-access-token prints the token as gcloud auth print-access-token
// does, so the catalog reads a path under a track as the path without it.
var gcloudTracks = []string{"alpha", "beta", "preview"}

// path is the subcommand path cli's entries are matched against: for
// gcloud, without a leading release track.
func path(cli string, sub []string) []string {
	if cli == "gcloud" && len(sub) > 0 && slices.Contains(gcloudTracks, sub[0]) {
		return sub[1:]
	}
	return sub
}

// Finding is what the catalog says about one flag or subcommand.
type Finding struct {
	// Classes are what it can do; none when the catalog says nothing.
	Classes Classes
	// Why is the catalog's line for it.
	Why string
}

// FlagName is flag without any "=value".
func FlagName(flag string) string {
	if i := strings.IndexByte(flag, '='); i > 0 {
		return flag[:i]
	}
	return flag
}

// LookupFlag says what flag (a "=value" ignored) can do when given to cli's
// subcommand sub. The CLI's own entries decide where any matches (an entry
// with no classes clears a generic name); otherwise the generic patterns.
//
// A name that is not a plain flag (empty, no leading "-", or holding
// anything but printable ASCII: control characters, blanks, look-alikes
// such as U+2010 for "-") matches nothing: no CLI takes it as the flag it
// resembles. For gcloud, a leading release track (alpha, beta, preview)
// is skipped before the entries' paths are matched.
func LookupFlag(cli string, sub []string, flag string) Finding {
	flag = FlagName(flag)
	sub = path(cli, sub)
	var f Finding
	if !plainFlag(flag) {
		return f
	}
	matched := false
	for _, e := range entries {
		if e.CLI != cli || e.Flag != flag || !e.holds(sub) {
			continue
		}
		matched = true
		f.Classes = f.Classes.Union(e.Classes)
		if f.Why == "" {
			f.Why = e.Why
		}
	}
	if matched {
		return f
	}
	// A CLI that takes a unique prefix of a long option as the option
	// (git push --receive-p, even git push --e for --exec) gets what the
	// options it can abbreviate get; an ambiguous prefix the CLI would
	// refuse gets them all, which errs on the safe side.
	if abbreviates(cli) && strings.HasPrefix(flag, "--") && len(flag) > len("--") {
		for _, e := range entries {
			if e.CLI != cli || !strings.HasPrefix(e.Flag, flag) || !e.holds(sub) {
				continue
			}
			matched = true
			f.Classes = f.Classes.Union(e.Classes)
			if f.Why == "" {
				f.Why = "abbreviates " + e.Flag + ": " + e.Why
			}
		}
	}
	if matched {
		return f
	}
	var won []string
	for _, p := range patterns {
		if p.Matches(flag) {
			won = append(won, p.Over...)
		}
	}
	for _, p := range patterns {
		if p.Matches(flag) && !slices.Contains(won, p.Name) {
			f.Classes = f.Classes.Union(p.Classes)
			if f.Why == "" {
				f.Why = p.Why
			}
		}
	}
	return f
}

// abbreviates reports whether cli takes a unique prefix of a long option
// as the option: git says so (gitcli(7), testdata/gitcli_man.txt); psql,
// mysql and curl use getopt-style parsers that do, and aws's argparse does
// (aws --endpoint-u is --endpoint-url). kubectl, gh and docker (pflag),
// gcloud and ssh do not.
func abbreviates(cli string) bool {
	switch cli {
	case "git", "psql", "mysql", "curl", "aws":
		return true
	}
	return false
}

// plainFlag reports whether name can be a flag: "-" then printable ASCII
// without blanks or "=".
func plainFlag(name string) bool {
	if len(name) < 2 || name[0] != '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c >= 0x7f || c == '=' {
			return false
		}
	}
	return true
}

// ReachedFlag is what flag can do under the longer subcommands that a rule
// for sub reaches through its positional arguments: wraptool writes the
// flags before the positionals, and a CLI that takes flags before the
// subcommand's name (kubectl, gh) applies them to it, so a rule for
// kubectl config given view and --raw runs kubectl config --raw view.
// reach says whether the rule's positionals can be the words after sub.
func ReachedFlag(cli string, sub []string, flag string, reach func(rest []string) bool) Classes {
	flag = FlagName(flag)
	var cs Classes
	p := path(cli, sub)
	for _, e := range entries {
		if e.CLI != cli || e.Flag != flag || e.Root || len(e.Subcommand) <= len(p) || !slices.Equal(e.Subcommand[:len(p)], p) {
			continue
		}
		if reach(e.Subcommand[len(p):]) {
			cs = cs.Union(e.Classes)
		}
	}
	return cs
}

// Flag is LookupFlag's classes.
func Flag(cli string, sub []string, flag string) Classes {
	return LookupFlag(cli, sub, flag).Classes
}

// LookupSubcommand says what running cli's subcommand sub can do by
// itself, whatever its flags (gh auth token prints the token).
//
// For gcloud, a leading release track (alpha, beta, preview) is skipped:
// gcloud beta auth print-access-token is gcloud auth print-access-token.
func LookupSubcommand(cli string, sub []string) Finding {
	sub = path(cli, sub)
	var f Finding
	for _, e := range entries {
		if e.CLI != cli || e.Flag != "" || len(sub) < len(e.Subcommand) || !slices.Equal(sub[:len(e.Subcommand)], e.Subcommand) {
			continue
		}
		f.Classes = f.Classes.Union(e.Classes)
		if f.Why == "" {
			f.Why = e.Why
		}
	}
	return f
}

// Subcommand is LookupSubcommand's classes.
func Subcommand(cli string, sub []string) Classes {
	return LookupSubcommand(cli, sub).Classes
}

// holds reports whether a flag entry applies under sub.
func (e Entry) holds(sub []string) bool {
	if e.Root {
		return len(sub) == 0
	}
	return len(sub) >= len(e.Subcommand) && slices.Equal(sub[:len(e.Subcommand)], e.Subcommand)
}

// Touch is one thing a command line touches that the catalog names.
type Touch struct {
	// Flag is the flag as given ("" for the subcommand itself).
	Flag string
	// Finding is what the catalog says.
	Finding
}

// Explain lists what a command line touches: the subcommand first, then
// each flag in the order given; what the catalog says nothing about is
// left out.
func Explain(cli string, sub, flags []string) []Touch {
	var out []Touch
	if f := LookupSubcommand(cli, sub); len(f.Classes) > 0 {
		out = append(out, Touch{Finding: f})
	}
	seen := map[string]bool{}
	for _, fl := range flags {
		name := FlagName(fl)
		if seen[name] {
			continue
		}
		seen[name] = true
		if f := LookupFlag(cli, sub, name); len(f.Classes) > 0 {
			out = append(out, Touch{Flag: name, Finding: f})
		}
	}
	return out
}

// patterns are the generic names. They are what many CLIs call these
// options; a CLI's own entry overrides them. Where two match, both count,
// unless one names the other in Over.
var patterns = []Pattern{
	{Name: "--host", Classes: Of(SendsCredentials), Why: "names the host a client connects to, with your credentials"},
	{Name: "--hostname", Classes: Of(SendsCredentials), Why: "names the host a client connects to, with your credentials"},
	{Name: "--server", Classes: Of(SendsCredentials), Why: "names the server a client connects to, with your credentials"},
	{Name: "--address", Classes: Of(SendsCredentials), Why: "names the address a client connects to, with your credentials"},
	{Name: "--endpoint*", Classes: Of(SendsCredentials), Why: "names the endpoint requests go to, signed with your credentials"},
	{Name: "--url", Classes: Of(SendsCredentials), Why: "names the URL requests go to, with your credentials"},
	{Name: "--api-url", Classes: Of(SendsCredentials), Why: "names the API requests go to, with your credentials"},
	{Name: "--*-url", Classes: Of(SendsCredentials), Why: "names a URL the tool talks to (--base-url, --index-url, --extra-index-url, --database-url), with your credentials"},
	{Name: "--uri", Classes: Of(SendsCredentials), Why: "names the URI a client connects to, with your credentials"},
	{Name: "--registry", Classes: Of(SendsCredentials), Why: "names the registry a client logs in to and sends to, with your credentials"},
	{Name: "--dsn", Classes: Of(SendsCredentials), Why: "a data source name: its host gets your database password"},
	{Name: "--connection-string", Classes: Of(SendsCredentials), Why: "a connection string: its host gets your credentials"},
	{Name: "--config", Classes: Of(SendsCredentials, ReadsFiles), Why: "reads a config file it names, which can say where your credentials go"},
	{Name: "--kubeconfig", Classes: Of(SendsCredentials, ReadsFiles), Why: "reads a kubeconfig it names: its server and its credentials"},
	{Name: "--profile", Classes: Of(SendsCredentials), Why: "picks which of your credentials are used, and where they go"},
	{Name: "--context", Classes: Of(SendsCredentials), Why: "picks which of your credentials are used, and where they go"},
	{Name: "--proxy", Classes: Of(SendsCredentials), Why: "sends the traffic, with your credentials, through the proxy it names"},
	{Name: "--token", Classes: Of(SendsCredentials), Why: "authenticates with the token it is given instead of the identity you set up: the call acts as whoever owns that token"},
	{Name: "--access-token", Classes: Of(SendsCredentials), Why: "authenticates with the token it is given instead of the identity you set up: the call acts as whoever owns that token"},
	{Name: "--auth-token", Classes: Of(SendsCredentials), Why: "authenticates with the token it is given instead of the identity you set up: the call acts as whoever owns that token"},
	{Name: "--api-key", Classes: Of(SendsCredentials), Why: "authenticates with the key it is given instead of the identity you set up: the call acts as whoever owns that key"},
	{Name: "--exec*", Classes: Of(RunsCode), Why: "names a program to run"},
	{Name: "--pager", Classes: Of(RunsCode), Why: "names a program the output is piped to"},
	{Name: "--*-command", Classes: Of(RunsCode), Why: "names a command to run"},
	{Name: "--command", Classes: Of(RunsCode), Why: "names a command to run"},
	{Name: "--cmd", Classes: Of(RunsCode), Why: "names a command to run"},
	{Name: "--shell", Classes: Of(RunsCode), Why: "names a shell to run, or runs its value through one"},
	{Name: "--editor", Classes: Of(RunsCode), Why: "names an editor program to run"},
	{Name: "--script", Classes: Of(RunsCode), Why: "names a script to run"},
	{Name: "--eval", Classes: Of(RunsCode), Why: "evaluates the code it is given"},
	{Name: "--output", Classes: Of(WritesFiles), Why: "names a file to write"},
	{Name: "-o", Classes: Of(WritesFiles), Why: "names a file to write, in many CLIs"},
	{Name: "--output-*", Classes: Of(WritesFiles), Why: "names a file or folder to write output to", Over: []string{"--*-file"}},
	{Name: "--out-*", Classes: Of(WritesFiles), Why: "names a file or folder to write output to", Over: []string{"--*-file"}},
	{Name: "--outfile", Classes: Of(WritesFiles), Why: "names a file to write"},
	{Name: "--log-file", Classes: Of(WritesFiles), Why: "names a file to write the log to", Over: []string{"--*-file"}},
	{Name: "--dump-file", Classes: Of(WritesFiles), Why: "names a file to write a dump to", Over: []string{"--*-file"}},
	{Name: "--template", Classes: Of(ReadsFiles), Why: "names a template to read"},
	{Name: "--*-file", Classes: Of(ReadsFiles), Why: "names a file to read"},
}
