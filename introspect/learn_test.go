package introspect

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy"
)

func TestLearnRunsOnlyTheFixedFormsInOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   []string
		subs  [][]string
		want  [][]string // every argv, in order
		known bool       // the subcommand's help was learned
		// noRoot: the root help is junk; otherwise it must be learned,
		// or the case would prove nothing about the rules it decides.
		noRoot bool
	}{
		{
			name: "the first form that prints a help wins",
			env:  []string{"HELPCLI_HELPCMD=1"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}}, known: true,
		},
		{
			name: "every form runs in order while earlier ones print nothing parseable",
			env:  []string{"HELPCLI_HELPCMD=1", "HELPCLI_JUNK=commit --help,commit -h"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}, {"commit", "-h"}, {"help", "commit"}}, known: true,
		},
		{
			name: "help sub… is not run when the root help lists no help command",
			env:  []string{"HELPCLI_JUNK=commit --help,commit -h"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}, {"commit", "-h"}},
		},
		{
			name: "help on stderr with exit 129 counts (git -h)",
			env:  []string{"HELPCLI_JUNK=commit --help", "HELPCLI_STDERR=commit -h", "HELPCLI_HELPCMD=1"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}, {"commit", "-h"}}, known: true,
		},
		{
			name: "-h is never run when the root help takes it for a host",
			env:  []string{"HELPCLI_STYLE=gnu", "HELPCLI_HOST=1", "HELPCLI_JUNK=commit --help"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}},
		},
		{
			name: "a help command is still used when -h is the host",
			env:  []string{"HELPCLI_STYLE=gnu", "HELPCLI_HOST=1", "HELPCLI_HELPCMD=1", "HELPCLI_JUNK=commit --help"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"commit", "--help"}, {"help", "commit"}}, known: true,
		},
		{
			name: "cobra lists help, so help sub… comes last",
			env:  []string{"HELPCLI_STYLE=cobra", "HELPCLI_JUNK=get --help,get -h"},
			subs: [][]string{{"get"}},
			want: [][]string{{"--help"}, {"get", "--help"}, {"get", "-h"}, {"help", "get"}}, known: true,
		},
		{
			name: "the root help falls back to -h, and nothing else",
			env:  []string{"HELPCLI_JUNK=--help"},
			want: [][]string{{"--help"}, {"-h"}},
		},
		{
			name: "without a root help a subcommand gets only --help",
			env:  []string{"HELPCLI_HELPCMD=1", "HELPCLI_JUNK=--help,-h,commit --help"},
			subs: [][]string{{"commit"}},
			want: [][]string{{"--help"}, {"-h"}, {"commit", "--help"}}, noRoot: true,
		},
		{
			name: "a multi-token subcommand keeps its tokens in front",
			env:  []string{"HELPCLI_HELPCMD=1", "HELPCLI_JUNK=remote add --help,remote add -h"},
			subs: [][]string{{"remote", "add"}},
			want: [][]string{{"--help"}, {"remote", "add", "--help"}, {"remote", "add", "-h"}, {"help", "remote", "add"}}, known: true,
		},
		{
			name: "duplicates run once and the root is not learned twice",
			subs: [][]string{{"commit"}, {"commit"}, {}, nil},
			want: [][]string{{"--help"}, {"commit", "--help"}}, known: true,
		},
		{
			name: "tokens that are not subcommand tokens never reach argv",
			subs: [][]string{{"--upload-pack=touch x"}, {"pull", "-x"}, {"a b"}, {""}},
			want: [][]string{{"--help"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "", tt.env...)
			c := learn(t, New(nil), false, f.tool(tt.subs...))
			if got := f.argvs(); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("ran %q\nwant %q", got, tt.want)
			}
			f.checkForms()
			if _, ok := c.Subcommands("cli", nil); ok == tt.noRoot {
				t.Errorf("root help known = %v, want %v", ok, !tt.noRoot)
			}
			if len(tt.subs) > 0 && len(tt.subs[0]) > 0 && !slices.ContainsFunc(tt.subs[0], func(s string) bool { return !policy.ValidToken(s) }) {
				if _, ok := c.Subcommands("cli", tt.subs[0]); ok != tt.known {
					t.Errorf("help of %q known = %v, want %v", tt.subs[0], ok, tt.known)
				}
			}
		})
	}
}

func TestLearnTimeoutEndsTheSubcommand(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	tests := []struct {
		name string
		hang string
		want [][]string // every argv, in any order
	}{
		{
			name: "a hanging sub --help is its only run; other subcommands go on",
			hang: "commit --help",
			want: [][]string{{"--help"}, {"commit", "--help"}, {"pull", "--help"}},
		},
		{
			name: "a hanging root --help skips root -h, and subcommands get only --help",
			hang: "--help",
			want: [][]string{{"--help"}, {"commit", "--help"}, {"pull", "--help"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "", "HELPCLI_HELPCMD=1", "HELPCLI_HANG="+tt.hang)
			var l logs
			in := New(&Options{Timeout: timeout, Log: l.logger()})
			start := time.Now()
			learn(t, in, false, f.tool([]string{"commit"}, []string{"pull"}))
			if elapsed := time.Since(start); elapsed >= 2*timeout {
				t.Errorf("Learn took %s; a hanging help must cost one timeout (%s)", elapsed, timeout)
			}
			got := f.argvs()
			sortArgvs(got)
			sortArgvs(tt.want)
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("ran %q\nwant %q", got, tt.want)
			}
			f.checkForms()
			if logged := l.all(); !strings.Contains(logged, "timed out after 1s") || !strings.Contains(logged, "tool=cli") {
				t.Errorf("warnings %q: want the tool and why", logged)
			}
		})
	}
}

func sortArgvs(a [][]string) {
	slices.SortFunc(a, func(x, y []string) int { return strings.Compare(strings.Join(x, " "), strings.Join(y, " ")) })
}

func TestLearnEndsPromptlyWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	fifo := filepath.Join(f.dir, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened read-write, so the open never blocks and a write end exists.
	started, err := os.OpenFile(fifo, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer started.Close()

	tool := f.tool([]string{"commit"})
	tool.Env = append(slices.Clone(f.env), "HELPCLI_HANG=--help", "HELPCLI_FIFO="+fifo)
	in := New(&Options{Timeout: 10 * time.Minute})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan *Catalog, 1)
	go func() { done <- in.Learn(ctx, []Tool{tool}, false) }()

	if err := started.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, err := started.Read(buf)
	if err != nil {
		t.Fatalf("the hanging help never started: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	if err != nil {
		t.Fatalf("pid %q: %v", buf[:n], err)
	}

	cancel()
	var c *Catalog
	select {
	case c = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Learn did not return within 5 s of its context ending")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the hanging child %d is still there (kill 0: %v)", pid, err)
	}
	if _, ok := c.Subcommands("cli", nil); ok {
		t.Errorf("a cancelled help is known")
	}
	if got, want := f.argvs(), [][]string{{"--help"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("ran %q, want %q: nothing more after the context ended", got, want)
	}

	// A cancelled run is not the tool's failure: the next Learn runs it.
	learn(t, in, false, f.tool([]string{"commit"}))
	if got := f.runs(); got != 3 {
		t.Errorf("after a cancelled Learn, the next ran %d times in all, want 3 (--help again, commit --help)", got)
	}
}

func TestLearnRunsAtMostTheLimitAtOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		limit int // Options.Concurrency
		want  int // the limit in force
	}{
		{"one at a time", 1, 1},
		{"two at a time", 2, 2},
		{"the default is four", 0, DefaultConcurrency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			marks := filepath.Join(t.TempDir(), "marks")
			var tools []Tool
			for i := range 6 {
				f := newFixture(t, "", "HELPCLI_MARKS="+marks, "HELPCLI_SLEEP=300ms")
				tool := f.tool([]string{"commit"}, []string{"pull"})
				tool.Name = fmt.Sprintf("cli%d", i)
				tools = append(tools, tool)
			}
			c := learn(t, New(&Options{Concurrency: tt.limit}), false, tools...)
			data, err := os.ReadFile(marks)
			if err != nil {
				t.Fatal(err)
			}
			running, most, starts := 0, 0, 0
			for _, m := range strings.Fields(string(data)) {
				if m == "+" {
					running++
					starts++
				} else {
					running--
				}
				most = max(most, running)
			}
			if starts != 18 {
				t.Errorf("%d runs, want 18 (6 tools: root, commit, pull)", starts)
			}
			if most > tt.want {
				t.Errorf("%d runs at once, want at most %d", most, tt.want)
			}
			if most < min(2, tt.want) {
				t.Errorf("at most %d runs at once: the tools were not learned concurrently", most)
			}
			for _, tool := range tools {
				if _, ok := c.Subcommands(tool.Name, []string{"pull"}); !ok {
					t.Errorf("%s pull not learned", tool.Name)
				}
			}
		})
	}
}

func TestLearnWarnsAndGoesOnWhenABinaryCannotRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := filepath.Join(dir, "plain")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := newFixture(t, "")
	var l logs
	c := learn(t, New(&Options{Log: l.logger()}), false,
		Tool{Name: "missing", Binary: filepath.Join(dir, "nope"), Subcommands: [][]string{{"x"}}},
		Tool{Name: "plain", Binary: notExec, Subcommands: [][]string{{"x"}}},
		good.tool([]string{"commit"}),
	)
	if _, ok := c.Subcommands("cli", []string{"commit"}); !ok {
		t.Errorf("a broken tool kept a good one from being learned")
	}
	for _, name := range []string{"missing", "plain"} {
		if _, ok := c.Subcommands(name, nil); ok {
			t.Errorf("%s: a help is known", name)
		}
	}
	logged := l.all()
	for _, want := range []string{"tool=missing", "tool=plain", "failed to start"} {
		if !strings.Contains(logged, want) {
			t.Errorf("warnings %q lack %q", logged, want)
		}
	}
}

// Loads asking for one help at the same time share one run of it; a load
// that gives up stops waiting, and the run is killed only with the load that
// started it, the others then running it themselves. The run slots are held
// by the test until both loads have joined, so the help cannot finish
// before the second one asks.
func TestLoadsOfOneHelpRunItOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// gives up names the load cancelled once both have joined: "",
		// "first" (the one that started the fetch) or "second".
		givesUp string
	}{
		{"two loads of one help at once run it once, and both learn it", ""},
		{"when the load that started the run gives up, the other runs it and learns it", "first"},
		{"a load that joined and gives up stops waiting; the one that started the run learns it", "second"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "")
			in := New(&Options{Concurrency: 1})
			joined := make(chan struct{}, 16)
			in.joined = func() { joined <- struct{}{} }
			if err := in.sem.Acquire(t.Context(), 1); err != nil {
				t.Fatal(err)
			}
			held := true
			defer func() {
				if held {
					in.sem.Release(1)
				}
			}()

			type load struct {
				cancel context.CancelFunc
				done   chan *Catalog
			}
			start := func() load {
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				l := load{cancel, make(chan *Catalog, 1)}
				go func() { l.done <- in.Learn(ctx, []Tool{f.tool()}, false) }()
				within(t, joined, "a load joining the fetch")
				return l
			}
			first := start()
			defer first.cancel()
			second := start()
			defer second.cancel()

			loads := map[string]load{"first": first, "second": second}
			if quitter, ok := loads[tt.givesUp]; ok {
				quitter.cancel()
				if _, ok := within(t, quitter.done, "the load that gave up").Subcommands("cli", nil); ok {
					t.Errorf("the %s load, which gave up, learned the help", tt.givesUp)
				}
				delete(loads, tt.givesUp)
			}
			in.sem.Release(1)
			held = false
			for name, l := range loads {
				if _, ok := within(t, l.done, "the "+name+" load").Subcommands("cli", nil); !ok {
					t.Errorf("the %s load did not learn the help", name)
				}
			}
			if got := f.runs(); got != 1 {
				t.Errorf("the help ran %d times, want once (%q)", got, f.argvs())
			}
		})
	}
}

// within receives from ch, failing the test after a minute.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("no %s within a minute", what)
		panic("unreachable")
	}
}
