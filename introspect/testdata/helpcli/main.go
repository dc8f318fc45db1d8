// Command helpcli is the introspect tests' fixture: a CLI whose help looks
// like git's, Cobra's or a GNU tool's, and that records how it was started.
// Everything is chosen by environment variables, because introspection
// passes the tool's environment through unchanged:
//
//	HELPCLI_LOG       append each argv as a JSON array line to this file
//	HELPCLI_MARKS     append "+" on start and "-" before exit to this file
//	HELPCLI_SLEEP     sleep this long (a Go duration) before answering
//	HELPCLI_STYLE     git (default), cobra or gnu
//	HELPCLI_HOST      "1": the root help lists -h, --host=HOSTNAME (psql)
//	HELPCLI_HELPCMD   "1": the root help lists a help command (cobra always does)
//	HELPCLI_HANG      argv (joined by spaces) that hang, comma-separated
//	HELPCLI_FIFO      a FIFO a hanging run writes its pid to first
//	HELPCLI_JUNK      argv that print nothing parseable and exit 1
//	HELPCLI_STDERR    argv whose help goes to stderr, exit 129 (git -h)
//
// An argv that is not one of the help forms prints "ran" and exits 0: the
// tests fail on seeing it in the log.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

func main() {
	args := os.Args[1:]
	if args == nil {
		args = []string{}
	}
	if path := os.Getenv("HELPCLI_LOG"); path != "" {
		line, _ := json.Marshal(args)
		appendLine(path, string(line))
	}
	if path := os.Getenv("HELPCLI_MARKS"); path != "" {
		appendLine(path, "+")
		defer appendLine(path, "-")
	}
	if d, err := time.ParseDuration(os.Getenv("HELPCLI_SLEEP")); err == nil {
		time.Sleep(d)
	}
	joined := strings.Join(args, " ")
	switch {
	case listed("HELPCLI_HANG", joined):
		if fifo := os.Getenv("HELPCLI_FIFO"); fifo != "" {
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				fmt.Fprintf(f, "%d\n", os.Getpid())
				f.Close()
			}
		}
		time.Sleep(10 * time.Minute)
		return
	case listed("HELPCLI_JUNK", joined):
		os.Exit(1)
	}
	style := os.Getenv("HELPCLI_STYLE")
	var sub []string
	var text string
	switch n := len(args); {
	case n > 0 && (args[n-1] == "--help" || args[n-1] == "-h"):
		sub = args[:n-1]
	case n > 0 && args[0] == "help" && (style == "cobra" || os.Getenv("HELPCLI_HELPCMD") == "1"):
		sub = args[1:]
	default:
		fmt.Println("ran")
		return
	}
	if len(sub) == 0 {
		text = rootHelp(style)
	} else {
		text = subHelp(style, sub)
	}
	if listed("HELPCLI_STDERR", joined) {
		fmt.Fprint(os.Stderr, text)
		exit(129)
	}
	fmt.Print(text)
}

// exit leaves with code after the deferred marks (os.Exit skips defers).
func exit(code int) {
	if path := os.Getenv("HELPCLI_MARKS"); path != "" {
		appendLine(path, "-")
	}
	os.Exit(code)
}

func listed(env, joined string) bool {
	return slices.Contains(strings.Split(os.Getenv(env), ","), joined)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f.WriteString(line + "\n") // one write: appends do not interleave
	f.Close()
}

func rootHelp(style string) string {
	helpCmd := os.Getenv("HELPCLI_HELPCMD") == "1"
	host := os.Getenv("HELPCLI_HOST") == "1"
	var b strings.Builder
	switch style {
	case "cobra":
		b.WriteString("helpcli controls the thing manager.\n\nUsage:\n  helpcli [flags]\n  helpcli [command]\n\n")
		b.WriteString("Available Commands:\n")
		b.WriteString("  commit      Record changes to the repository\n")
		b.WriteString("  get         Display one or many resources\n")
		b.WriteString("  help        Help about any command\n")
		b.WriteString("  pull        Fetch from and integrate with another repository\n")
		b.WriteString("  remote      Manage set of tracked repositories\n\n")
		b.WriteString("Flags:\n")
		if host {
			b.WriteString("  -h, --host string   server host\n")
			b.WriteString("      --help          help for helpcli\n")
		} else {
			b.WriteString("  -h, --help   help for helpcli\n")
		}
		b.WriteString("\nUse \"helpcli [command] --help\" for more information about a command.\n")
	case "gnu":
		b.WriteString("Usage: helpcli [OPTION]... COMMAND [ARG]...\nQuery the thing manager.\n\n")
		b.WriteString("Commands:\n")
		b.WriteString("  commit     Record changes to the repository\n")
		if helpCmd {
			b.WriteString("  help       Show help for a command\n")
		}
		b.WriteString("  pull       Fetch from and integrate with another repository\n")
		b.WriteString("  remote     Manage set of tracked repositories\n\n")
		b.WriteString("Options:\n")
		if host {
			b.WriteString("  -h, --host=HOSTNAME      database server host or socket directory\n")
		}
		b.WriteString("  -p, --port=PORT          database server port\n")
		b.WriteString("  -q, --quiet              run quietly\n")
		b.WriteString("  -?, --help               show this help, then exit\n")
	default:
		b.WriteString("usage: helpcli [-v | --version] [-h | --help] [-C <path>] <command> [<args>]\n\n")
		b.WriteString("These are common helpcli commands used in various situations:\n\n")
		b.WriteString("   commit     Record changes to the repository\n")
		if helpCmd {
			b.WriteString("   help       Display help information about helpcli\n")
		}
		b.WriteString("   pull       Fetch from and integrate with another repository or a local branch\n")
		b.WriteString("   remote     Manage set of tracked repositories\n")
		if host {
			b.WriteString("\n    -h, --host <host>     server host\n")
		}
	}
	return b.String()
}

func subHelp(style string, sub []string) string {
	name := strings.Join(sub, " ")
	switch style {
	case "cobra":
		return "Work with " + name + ".\n\nUsage:\n  helpcli " + name + " [flags]\n\n" +
			"Flags:\n" +
			"      --chunk-size int   Return large lists in chunks (default 500)\n" +
			"  -h, --help             help for " + sub[len(sub)-1] + "\n" +
			"  -o, --output string    Output format\n"
	case "gnu":
		return "Usage: helpcli " + name + " [OPTION]... [FILE]...\nWork with " + name + ".\n\n" +
			"  -a, --all                  do not ignore entries starting with .\n" +
			"      --color[=WHEN]         color the output WHEN\n" +
			"  -w, --width=COLS           set output width to COLS\n" +
			"      --help     display this help and exit\n"
	}
	return "usage: helpcli " + name + " [<options>] [--] <pathspec>...\n\n" +
		"    -q, --quiet           suppress summary after successful " + name + "\n" +
		"    -m, --message <message>\n" +
		"                          " + name + " message\n" +
		"    --depth <depth>       deepen history of shallow clone\n" +
		"    --cleanup[=<mode>]    how to strip spaces and #comments from message\n" +
		"    --[no-]verify         bypass pre-commit and commit-msg hooks\n"
}
