// Command fakecli is wraptool's test stand-in for a wrapped CLI. By default it
// prints its argv, environment and working directory as JSON. Its first
// argument picks other behaviours the tests need:
//
//	exit N              exit with status N after printing to both streams
//	spam N              write N bytes to stdout and N bytes to stderr
//	sleep D             sleep for duration D
//	grandchild FILE     start a grandchild that writes its PID to FILE and
//	                    sleeps, then sleep; a timeout must kill both
//	setsid FILE [hang]  start a grandchild in a session of its own (out of
//	                    the call's process group, stdio on /dev/null) that
//	                    writes its PID to FILE and sleeps; once FILE is
//	                    written, exit 0, or with "hang" sleep: only
//	                    wraptool's subreaper can end that grandchild
//	markwait MARK FILE  create MARK (the run has started), then as waitfor
//	stdin               report how many bytes stdin held
//	waitfor FILE        wait until FILE exists (at most two minutes), print
//	                    "released" and exit 0: a call the test ends at will
//	record DIR ARG…     read stdin to its end, write what it got (argv,
//	                    environment, stdin, working directory) as JSON to
//	                    DIR/PID.json (whole: written aside, then renamed),
//	                    and exit 0: a hook the test inspects afterwards
//	recordwait DIR FILE ARG…
//	                    as record, then as waitfor FILE: a hook that runs
//	                    until the test releases it (or never, if FILE is
//	                    never created)
//
// Whatever the mode, a last argument --help or -h prints GNU-style help and
// exits 0, as wraptool's introspection expects of a real tool; except below
// a subcommand "nohelp", whose help prints nothing and exits 1 (a help
// wraptool cannot learn).
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	// Help asked for (wraptool's introspection runs "fakecli sub… --help",
	// and a seeded help flag runs alone, so it comes last): answer like a
	// GNU tool, at once, whatever the mode.
	if n := len(args); n > 0 && (args[n-1] == "--help" || args[n-1] == "-h") {
		printHelp(args[:n-1])
		return
	}
	mode := ""
	if len(args) > 0 {
		mode = args[0]
	}
	switch mode {
	case "exit":
		n, _ := strconv.Atoi(arg(args, 1))
		fmt.Println("to stdout")
		fmt.Fprintln(os.Stderr, "to stderr")
		os.Exit(n)
	case "spam":
		n, _ := strconv.Atoi(arg(args, 1))
		chunk := []byte(strings.Repeat("é", 512)) // two bytes each: cuts can split one
		for _, w := range []io.Writer{os.Stdout, os.Stderr} {
			for left := n; left > 0; left -= len(chunk) {
				w.Write(chunk[:min(left, len(chunk))])
			}
		}
	case "sleep":
		d, _ := time.ParseDuration(arg(args, 1))
		time.Sleep(d)
	case "grandchild":
		child := exec.Command(os.Args[0], "pidfile", arg(args, 1))
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		time.Sleep(time.Hour)
	case "setsid":
		child := exec.Command(os.Args[0], "pidfile", arg(args, 1))
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
			if data, err := os.ReadFile(arg(args, 1)); err == nil && len(data) > 0 {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "setsid: the grandchild never wrote its pid")
				os.Exit(3)
			}
		}
		if arg(args, 2) == "hang" {
			time.Sleep(time.Hour)
		}
	case "pidfile":
		// Write to a temporary name and rename, so a reader never sees a
		// partial pid.
		tmp := arg(args, 1) + ".tmp"
		os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600)
		os.Rename(tmp, arg(args, 1))
		time.Sleep(time.Hour)
	case "markwait":
		if err := os.WriteFile(arg(args, 1), nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		waitfor(arg(args, 2))
	case "waitfor":
		waitfor(arg(args, 1))
	case "record":
		record(arg(args, 1))
	case "recordwait":
		record(arg(args, 1))
		waitfor(arg(args, 2))
	case "stdin":
		n, err := io.Copy(io.Discard, os.Stdin)
		fmt.Printf("{\"stdin_bytes\":%d,\"err\":%q}\n", n, fmt.Sprint(err))
	default:
		report(args)
	}
}

// waitfor returns once file exists, printing "released"; after two minutes
// it gives up and exits 3.
func waitfor(file string) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(file); err == nil {
			fmt.Println("released")
			return
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "waitfor: gave up")
			os.Exit(3)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// record writes what this process got to dir/PID.json: argv, the sorted
// environment, all of stdin and the working directory.
func record(dir string) {
	stdin, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "record: read stdin:", err)
		os.Exit(2)
	}
	env := os.Environ()
	sort.Strings(env)
	wd, _ := os.Getwd()
	data, _ := json.Marshal(struct {
		Argv  []string `json:"argv"`
		Env   []string `json:"env"`
		Stdin string   `json:"stdin"`
		Cwd   string   `json:"cwd"`
	}{os.Args, env, string(stdin), wd})
	name := filepath.Join(dir, strconv.Itoa(os.Getpid())+".json")
	if err := os.WriteFile(name+".tmp", data, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(2)
	}
	if err := os.Rename(name+".tmp", name); err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(2)
	}
}

func arg(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

func report(args []string) {
	env := os.Environ()
	sort.Strings(env)
	wd, _ := os.Getwd()
	json.NewEncoder(os.Stdout).Encode(struct {
		Argv []string `json:"argv"`
		Env  []string `json:"env"`
		Cwd  string   `json:"cwd"`
	}{append([]string{os.Args[0]}, args...), env, wd})
}

// printHelp prints GNU-style help for the subcommand sub: a description,
// and flags of each kind introspection tells apart.
func printHelp(sub []string) {
	if len(sub) > 0 && sub[0] == "nohelp" {
		os.Exit(1)
	}
	name := strings.Join(append([]string{"fakecli"}, sub...), " ")
	fmt.Printf(`Usage: %s [OPTION]... [ARG]...
The fake CLI of wraptool's tests (%s).

  -v, --verbose              say more
  -m, --message=MSG          use MSG as the message
      --depth=NUM            limit to NUM commits
      --color[=WHEN]         colorize the output; WHEN is always, never or auto
  -o, --output=FILE          write the report to FILE
      --exec=CMD             run CMD on the report
  -h, --help                 display this help and exit
`, name, name)
}
