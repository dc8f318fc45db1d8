// Command fakecli is wraptool's test stand-in for a wrapped CLI. By default it
// prints its argv, environment and working directory as JSON. Its first
// argument picks other behaviours the tests need:
//
//	exit N            exit with status N after printing to both streams
//	spam N            write N bytes to stdout and N bytes to stderr
//	sleep D           sleep for duration D
//	grandchild FILE   start a grandchild that writes its PID to FILE and
//	                  sleeps, then sleep; a timeout must kill both
//	stdin             report how many bytes stdin held
//	waitfor FILE      wait until FILE exists (at most two minutes), print
//	                  "released" and exit 0: a call the test ends at will
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	args := os.Args[1:]
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
	case "pidfile":
		os.WriteFile(arg(args, 1), []byte(strconv.Itoa(os.Getpid())), 0o600)
		time.Sleep(time.Hour)
	case "waitfor":
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if _, err := os.Stat(arg(args, 1)); err == nil {
				fmt.Println("released")
				return
			}
			if time.Now().After(deadline) {
				fmt.Fprintln(os.Stderr, "waitfor: gave up")
				os.Exit(3)
			}
			time.Sleep(10 * time.Millisecond)
		}
	case "stdin":
		n, err := io.Copy(io.Discard, os.Stdin)
		fmt.Printf("{\"stdin_bytes\":%d,\"err\":%q}\n", n, fmt.Sprint(err))
	default:
		report(args)
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
