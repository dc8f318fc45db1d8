package introspect

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// cacheFiles lists the entries in dir (temporary files excluded).
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestCacheHitRunsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	dir := filepath.Join(t.TempDir(), "introspection")
	tool := f.tool([]string{"commit"}, []string{"remote", "add"})
	first := learn(t, New(&Options{CacheDir: dir}), false, tool)
	if got := f.runs(); got != 3 {
		t.Fatalf("first Learn ran %d times, want 3 (root, commit, remote add)", got)
	}

	// A new Introspector has an empty memory: only the disk can answer.
	second := learn(t, New(&Options{CacheDir: dir}), false, tool)
	if got := f.runs(); got != 3 {
		t.Errorf("a second Learn from the disk cache ran the tool %d more times", got-3)
	}
	for _, sub := range [][]string{nil, {"commit"}, {"remote", "add"}} {
		a, _ := first.Subcommands("cli", sub)
		b, ok := second.Subcommands("cli", sub)
		fa, _ := first.Flag("cli", sub, "-m")
		fb, _ := second.Flag("cli", sub, "-m")
		if !ok || !equalMaps(a, b) || fa != fb {
			t.Errorf("%q from the cache: %v %v %+v, want %v %+v", sub, ok, b, fb, a, fa)
		}
	}

	// The files: 0600 in a 0700 folder, named by the key's hash.
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("cache folder: %v, %v; want mode 0700", info.Mode(), err)
	}
	files := cacheFiles(t, dir)
	if len(files) != 3 {
		t.Fatalf("%d cache files, want 3", len(files))
	}
	for _, name := range files {
		info, err := os.Stat(name)
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want mode 0600", name, info.Mode(), err)
		}
		if base := filepath.Base(name); len(base) != 64+len(".json") {
			t.Errorf("cache file %s is not named by a SHA-256", base)
		}
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}

	// The same Introspector answers from memory, even with the disk gone.
	in := New(&Options{CacheDir: dir})
	learn(t, in, false, tool)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	learn(t, in, false, tool)
	if got := f.runs(); got != 3 {
		t.Errorf("memory hits ran the tool %d more times", got-3)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestCacheTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		ttl   time.Duration // Tool.CacheTTL
		later time.Duration // how much later the second Learn runs
		runs  bool
	}{
		{"within the TTL nothing runs", time.Hour, 59 * time.Minute, false},
		{"past the TTL everything runs again", time.Hour, 61 * time.Minute, true},
		{"the default TTL is 24h", 0, 23 * time.Hour, false},
		{"past the default TTL", 0, 25 * time.Hour, true},
		{"an entry from the future (a clock set back) is not trusted", time.Hour, -time.Minute, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "")
			tool := f.tool([]string{"commit"})
			tool.CacheTTL = tt.ttl
			check := func(where string, first, second *Introspector, clk *clock) {
				learn(t, first, false, tool)
				clk.advance(tt.later)
				before := f.runs()
				learn(t, second, false, tool)
				if ran := f.runs() - before; (ran > 0) != tt.runs {
					t.Errorf("%s: ran %d times %s later, want runs %v", where, ran, tt.later, tt.runs)
				}
			}
			// A fresh Introspector reads the disk; one with no disk cache
			// reads its memory: both honour the TTL.
			dir, clk := t.TempDir(), newClock()
			check("disk", New(&Options{CacheDir: dir, Now: clk.Now}), New(&Options{CacheDir: dir, Now: clk.Now}), clk)
			clk = newClock()
			mem := New(&Options{Now: clk.Now})
			check("memory", mem, mem, clk)
		})
	}
}

func TestCacheMissesWhenTheBinaryChanges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		target string // what the fixture's path points to first
		change func(f *fixture)
	}{
		{"a new size", helpcli, func(f *fixture) { f.retarget(helpcliGrown) }},
		{"a new modification time", helpcliTouch, func(f *fixture) {
			if err := os.Chtimes(helpcliTouch, time.Time{}, time.Now().Add(time.Hour)); err != nil {
				f.t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.target)
			dir := t.TempDir()
			in := New(&Options{CacheDir: dir})
			tool := f.tool([]string{"commit"})
			learn(t, in, false, tool)
			learn(t, in, false, tool)
			if got := f.runs(); got != 2 {
				t.Fatalf("ran %d times before the change, want 2", got)
			}
			tt.change(f)
			learn(t, in, false, tool)
			if got := f.runs(); got != 4 {
				t.Errorf("after the change: ran %d times in all, want 4 (memory and disk both miss)", got)
			}
			if got := len(cacheFiles(t, dir)); got != 4 {
				t.Errorf("%d cache files, want 4 (two builds, two helps each)", got)
			}
		})
	}
}

func TestCacheCorruptEntryIsRebuilt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		corrupt func(t *testing.T, path string, other []byte)
	}{
		{"garbage", func(t *testing.T, path string, _ []byte) { configtest.WriteFile(t, path, "\x00\xffnot json", 0o600) }},
		{"truncated", func(t *testing.T, path string, _ []byte) {
			data, _ := os.ReadFile(path)
			configtest.WriteFile(t, path, string(data[:len(data)/2]), 0o600)
		}},
		{"empty", func(t *testing.T, path string, _ []byte) { configtest.WriteFile(t, path, "", 0o600) }},
		{"another key's entry", func(t *testing.T, path string, other []byte) { configtest.WriteFile(t, path, string(other), 0o600) }},
		{"writable by others", func(t *testing.T, path string, _ []byte) {
			if err := os.Chmod(path, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"unreadable", func(t *testing.T, path string, _ []byte) {
			if err := os.Chmod(path, 0); err != nil {
				t.Fatal(err)
			}
		}},
		{"a folder in its place", func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.name == "unreadable" && os.Geteuid() == 0 {
				t.Skip("root reads any file")
			}
			f := newFixture(t, "")
			dir := t.TempDir()
			tool := f.tool()
			learn(t, New(&Options{CacheDir: dir}), false, tool)
			files := cacheFiles(t, dir)
			if len(files) != 1 {
				t.Fatalf("%d cache files, want 1", len(files))
			}
			// An entry of the same shape under another key.
			other, _ := json.Marshal(cacheEntry{entryKey: newEntryKey(binKey{path: "/bin/other", size: 1, mtime: 1}, nil), FetchedAt: time.Now()})
			tt.corrupt(t, files[0], other)

			c := learn(t, New(&Options{CacheDir: dir}), false, tool)
			if got := f.runs(); got != 2 {
				t.Errorf("ran %d times in all, want 2: a bad entry is a miss", got)
			}
			if _, ok := c.Subcommands("cli", nil); !ok {
				t.Errorf("the help was not learned again")
			}
			if tt.name == "a folder in its place" {
				return // not replaced: the fetched help still serves from memory
			}
			learn(t, New(&Options{CacheDir: dir}), false, tool)
			if got := f.runs(); got != 2 {
				t.Errorf("the rebuilt entry did not serve: ran %d times in all, want 2", got)
			}
		})
	}
}

func TestFailuresAreRememberedButNotCached(t *testing.T) {
	t.Parallel()
	// commit prints nothing parseable however it is asked.
	junk := "HELPCLI_JUNK=commit --help,commit -h"
	type step struct {
		what    string
		do      func(f *fixture, in **Introspector, dir string) bool // returns force
		newRuns int
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"a reload does not run a failed help again", []step{
			{"reload", func(*fixture, **Introspector, string) bool { return false }, 0},
			{"another reload", func(*fixture, **Introspector, string) bool { return false }, 0},
		}},
		{"a forced reload (SIGHUP) retries it", []step{
			{"forced reload", func(*fixture, **Introspector, string) bool { return true }, 2},
			{"reload", func(*fixture, **Introspector, string) bool { return false }, 0},
		}},
		{"a new build of the binary retries it", []step{
			{"binary changed", func(f *fixture, _ **Introspector, _ string) bool { f.retarget(helpcliGrown); return false }, 3},
		}},
		{"failures are not written to disk", []step{
			{"new process", func(_ *fixture, in **Introspector, dir string) bool {
				*in = New(&Options{CacheDir: dir})
				return false
			}, 2},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "", junk)
			dir := t.TempDir()
			var l logs
			in := New(&Options{CacheDir: dir, Log: l.logger()})
			tool := f.tool([]string{"commit"})
			learn(t, in, false, tool)
			if got := f.runs(); got != 3 {
				t.Fatalf("first Learn ran %d times, want 3 (root, commit --help, commit -h)", got)
			}
			if !strings.Contains(l.all(), "nothing parseable") || !strings.Contains(l.all(), "subcommand=commit") {
				t.Errorf("warnings %q: want subcommand and why", l.all())
			}
			if got := len(cacheFiles(t, dir)); got != 1 {
				t.Errorf("%d cache files, want 1 (the root; never a failure)", got)
			}
			for _, s := range tt.steps {
				before := f.runs()
				force := s.do(f, &in, dir)
				c := learn(t, in, force, tool)
				if got := f.runs() - before; got != s.newRuns {
					t.Errorf("%s: ran %d times, want %d", s.what, got, s.newRuns)
				}
				if _, ok := c.Subcommands("cli", nil); !ok {
					t.Errorf("%s: the root help is lost", s.what)
				}
			}
			f.checkForms()
		})
	}
}

func TestAFailedRefreshKeepsTheStaleHelp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	clk := newClock()
	in := New(&Options{CacheDir: t.TempDir(), Now: clk.Now})
	tool := f.tool([]string{"commit"})
	learn(t, in, false, tool)
	clk.advance(25 * time.Hour)
	// Now every help fails, but the binary is the same: what was learned
	// is still the best answer.
	tool.Env = append(slices.Clone(f.env), "HELPCLI_JUNK=--help,-h,commit --help,commit -h")
	c := learn(t, in, false, tool)
	if got := f.runs(); got != 6 {
		t.Errorf("ran %d times in all, want 6 (the refresh was tried: --help, -h, commit --help, commit -h)", got)
	}
	if fh, ok := c.Flag("cli", []string{"commit"}, "--depth"); !ok || fh.Type == policy.TypeUnknown {
		t.Errorf("--depth after a failed refresh: %+v, %v; want the stale help's answer", fh, ok)
	}
	learn(t, in, false, tool)
	if got := f.runs(); got != 6 {
		t.Errorf("the failed refresh was run again (%d runs in all)", got)
	}
}

func TestCacheOnlyRunsNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	dir := filepath.Join(t.TempDir(), "introspection")
	clk := newClock()
	tool := f.tool([]string{"commit"})

	c := learn(t, New(&Options{CacheDir: dir, CacheOnly: true, Now: clk.Now}), false, tool)
	if _, ok := c.Subcommands("cli", nil); ok || f.runs() != 0 {
		t.Errorf("cache-only with an empty cache: known %v, ran %d times", ok, f.runs())
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cache-only created the cache folder (%v): it touches nothing", err)
	}

	learn(t, New(&Options{CacheDir: dir, Now: clk.Now}), false, tool)
	clk.advance(365 * 24 * time.Hour)
	c = learn(t, New(&Options{CacheDir: dir, CacheOnly: true, Now: clk.Now}), true, tool)
	if got := f.runs(); got != 2 {
		t.Errorf("cache-only ran the tool (%d runs in all, want 2)", got)
	}
	if _, ok := c.Subcommands("cli", []string{"commit"}); !ok {
		t.Errorf("cache-only does not answer from an old entry of the same binary")
	}
}

func TestOverridesWinOverLearnedHelp(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "")
	ov, err := ParseOverrides("cli.yaml", []byte(`
subcommands:
  "":
    description: "The fixture CLI"
  commit:
    description: "Make a commit"
    flags:
      "--depth": {type: string, description: "how deep"}
      "--message": {short: "-M"}
      "--cleanup": {type: string}
      "--signoff": {short: "-s", type: boolean, description: "add Signed-off-by"}
  "remote add":
    flags:
      "--fetch": {type: integer}
`))
	if err != nil {
		t.Fatal(err)
	}
	tool := f.tool([]string{"commit"}, []string{"remote", "add"})
	tool.Overrides = ov
	c := learn(t, New(nil), false, tool)
	commit := []string{"commit"}

	flags := []struct {
		sub  []string
		flag string
		want policy.FlagHelp
		ok   bool
	}{
		{commit, "--depth", policy.FlagHelp{Type: policy.TypeString, Description: "how deep"}, true},
		{commit, "-M", policy.FlagHelp{Type: policy.TypeString, Description: "commit message"}, true},
		{commit, "--cleanup", policy.FlagHelp{Type: policy.TypeString, Description: "how to strip spaces and #comments from message"}, true},
		{commit, "-s", policy.FlagHelp{Type: policy.TypeBoolean, Description: "add Signed-off-by"}, true},
		{commit, "--signoff", policy.FlagHelp{Type: policy.TypeBoolean, Description: "add Signed-off-by"}, true},
		{commit, "-q", policy.FlagHelp{Type: policy.TypeBoolean, Description: "suppress summary after successful commit"}, true},
		{[]string{"remote", "add"}, "--fetch", policy.FlagHelp{Type: policy.TypeInteger}, true},
		{commit, "--fetch", policy.FlagHelp{}, false},
	}
	for _, tt := range flags {
		if got, ok := c.Flag("cli", tt.sub, tt.flag); got != tt.want || ok != tt.ok {
			t.Errorf("Flag(%q, %s) = %+v, %v; want %+v, %v", tt.sub, tt.flag, got, ok, tt.want, tt.ok)
		}
	}
	if got := c.Description("cli", commit); got != "Make a commit" {
		t.Errorf("Description(commit) = %q, want the override", got)
	}
	if got := c.Description("cli", nil); got != "The fixture CLI" {
		t.Errorf("Description(root) = %q, want the override", got)
	}
	if got := c.Description("cli", []string{"pull"}); got != "Fetch from and integrate with another repository or a local branch" {
		t.Errorf("Description(pull) = %q, want the root help's listing", got)
	}
}

// An entry the cache cannot trust, whatever its shape, counts as missing:
// a cache-only reader (the CLI) knows no help for it, so every flag of it
// is policy.HelpUnknown and never "a help with no flags"; a warning names
// the entry; and a reader that may run the tool fetches the help again.
func TestCacheUnusableEntriesCountAsMissing(t *testing.T) {
	t.Parallel()
	// withHelp is the valid entry with its help replaced by help, its key
	// kept to the digit (numbers stay json.Number: a float64 would round
	// the modification time, and the key would no longer match).
	withHelp := func(t *testing.T, valid []byte, help any) []byte {
		var e map[string]any
		dec := json.NewDecoder(bytes.NewReader(valid))
		dec.UseNumber()
		if err := dec.Decode(&e); err != nil {
			t.Fatal(err)
		}
		e["help"] = help
		data, _ := json.Marshal(e)
		return data
	}
	tests := []struct {
		name    string
		corrupt func(t *testing.T, path string, valid []byte)
	}{
		{"an empty file", func(t *testing.T, path string, _ []byte) { configtest.WriteFile(t, path, "", 0o600) }},
		{"an empty object", func(t *testing.T, path string, _ []byte) { configtest.WriteFile(t, path, "{}", 0o600) }},
		{"only a version", func(t *testing.T, path string, _ []byte) { configtest.WriteFile(t, path, `{"version":1}`, 0o600) }},
		{"truncated JSON", func(t *testing.T, path string, valid []byte) {
			configtest.WriteFile(t, path, string(valid[:len(valid)-2]), 0o600)
		}},
		{"another key's entry", func(t *testing.T, path string, _ []byte) {
			other, _ := json.Marshal(cacheEntry{entryKey: newEntryKey(binKey{path: "/bin/other", size: 1, mtime: 1}, nil), FetchedAt: time.Now(),
				Help: helptext.Help{Flags: []helptext.Flag{{Long: "--rece"}}}})
			configtest.WriteFile(t, path, string(other), 0o600)
		}},
		{"its key with the help removed", func(t *testing.T, path string, valid []byte) {
			configtest.WriteFile(t, path, string(withHelp(t, valid, nil)), 0o600)
		}},
		{"its key with an empty help", func(t *testing.T, path string, valid []byte) {
			configtest.WriteFile(t, path, string(withHelp(t, valid, map[string]any{})), 0o600)
		}},
		{"its key with a help listing no flags and no subcommands", func(t *testing.T, path string, valid []byte) {
			configtest.WriteFile(t, path, string(withHelp(t, valid, map[string]any{"Style": "git", "Flags": []any{}, "Subcommands": []any{}})), 0o600)
		}},
		{"a valid entry padded past the size limit", func(t *testing.T, path string, valid []byte) {
			configtest.WriteFile(t, path, string(append(valid, bytes.Repeat([]byte(" "), maxEntrySize)...)), 0o600)
		}},
		{"a symlink to a copy of the valid entry", func(t *testing.T, path string, valid []byte) {
			elsewhere := filepath.Join(t.TempDir(), "entry.json")
			configtest.WriteFile(t, elsewhere, string(valid), 0o600)
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, path); err != nil {
				t.Fatal(err)
			}
		}},
		{"a folder", func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}},
		{"a FIFO", func(t *testing.T, path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run("an entry that is "+tt.name+" counts as missing", func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "")
			dir := t.TempDir()
			tool := f.tool()
			learn(t, New(&Options{CacheDir: dir}), false, tool)
			files := cacheFiles(t, dir)
			if len(files) != 1 {
				t.Fatalf("%d cache files, want 1", len(files))
			}
			valid, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			if c := learn(t, New(&Options{CacheDir: dir, CacheOnly: true}), false, tool); policy.ListingOf(c, "cli", nil, "--rece") != policy.NotListed {
				t.Fatalf("the valid entry does not serve: --rece is %v", policy.ListingOf(c, "cli", nil, "--rece"))
			}
			tt.corrupt(t, files[0], valid)

			var l logs
			c := learn(t, New(&Options{CacheDir: dir, CacheOnly: true, Log: l.logger()}), false, tool)
			if _, ok := c.Subcommands("cli", nil); ok {
				t.Errorf("a cache-only reader knows the help from the entry")
			}
			for _, flag := range []string{"--rece", "-m"} {
				if got := policy.ListingOf(c, "cli", nil, flag); got != policy.HelpUnknown {
					t.Errorf("%s is %v, want help unknown", flag, got)
				}
			}
			if logged := l.all(); !strings.Contains(logged, "introspection cache entry unusable") || !strings.Contains(logged, files[0]) {
				t.Errorf("warnings %q: want one naming the entry", logged)
			}
			if f.runs() != 1 {
				t.Errorf("the cache-only reader ran the tool")
			}

			c = learn(t, New(&Options{CacheDir: dir}), false, tool)
			if f.runs() != 2 {
				t.Errorf("ran %d times in all, want 2: the help is fetched again", f.runs())
			}
			if got := policy.ListingOf(c, "cli", nil, "--rece"); got != policy.NotListed {
				t.Errorf("after the fetch --rece is %v, want not listed", got)
			}
		})
	}
}

// TestHelpRunsShareOneWorkFolder: every help run gets an empty folder of
// its own inside one work folder, so the system's temporary folder does not
// change from run to run; Close removes it.
func TestHelpRunsShareOneWorkFolder(t *testing.T) {
	in := New(&Options{CacheDir: t.TempDir()})
	a, err := in.runDir()
	if err != nil {
		t.Fatal(err)
	}
	b, err := in.runDir()
	if err != nil {
		t.Fatal(err)
	}
	if a == b || filepath.Dir(a) != filepath.Dir(b) {
		t.Errorf("run folders %s and %s, want two in one work folder", a, b)
	}
	work := filepath.Dir(a)
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(work); err == nil {
		t.Errorf("Close left %s", work)
	}
	if c, err := in.runDir(); err != nil || filepath.Dir(c) == work {
		t.Errorf("a run after Close got %s, %v; want a new work folder", c, err)
	}
	in.Close()
}
