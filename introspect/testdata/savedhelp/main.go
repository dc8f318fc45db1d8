// Command savedhelp is a fixture CLI that answers with saved help texts, so
// tests can introspect a real tool's help (git's, a Cobra tool's) without
// the tool. Introspection gives a child only PATH, HOME and LANG, so
// everything is found from the path it was started as (argv[0], not the
// resolved executable, so one build serves many names):
//
//	ARGV0.help/ARGS.txt   printed on stdout for the argument list ARGS,
//	                      joined with "_" ("--help.txt", "pr_list_--help.txt")
//	ARGV0.log             each argument list appended as a JSON array line
//
// An argument list ending in -h exits 129 as git's does; one without a
// saved text prints nothing and exits 1.
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	self := os.Args[0]
	args := os.Args[1:]
	if args == nil {
		args = []string{}
	}
	if f, err := os.OpenFile(self+".log", os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		line, _ := json.Marshal(args)
		f.Write(append(line, '\n'))
		f.Close()
	}
	text, err := os.ReadFile(filepath.Join(self+".help", strings.Join(args, "_")+".txt"))
	if err != nil {
		os.Exit(1)
	}
	os.Stdout.Write(text)
	if len(args) > 0 && args[len(args)-1] == "-h" {
		os.Exit(129)
	}
}
