package introspect

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fixture binaries, built once by TestMain: helpcli itself, a copy with
// bytes appended (same program, another size), and a private copy whose
// modification time one test changes. Copies are made before any test runs:
// writing an executable while other goroutines fork can leave a write
// descriptor open in a child and make exec fail with "text file busy".
var (
	helpcli      string
	helpcliGrown string
	helpcliTouch string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "helpcli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := buildFixtures(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Introspectors the tests do not Close leave their (empty) work
	// folders here, removed with the fixtures.
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Setenv("TMPDIR", tmp)
	return m.Run()
}

func buildFixtures(dir string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	helpcli = filepath.Join(dir, "helpcli")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", helpcli, ".")
	cmd.Dir = filepath.Join("testdata", "helpcli")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build helpcli: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(helpcli)
	if err != nil {
		return err
	}
	helpcliGrown = filepath.Join(dir, "helpcli-grown")
	helpcliTouch = filepath.Join(dir, "helpcli-touch")
	if err := os.WriteFile(helpcliGrown, append(bin, "appended bytes change the size"...), 0o755); err != nil {
		return err
	}
	return os.WriteFile(helpcliTouch, bin, 0o755)
}

// fixture is one test's view of helpcli: a binary path of its own (a
// symlink, so the test can point it at another build), its argv log and
// environment.
type fixture struct {
	t   *testing.T
	dir string
	bin string
	log string
	env []string
}

// newFixture links a private path to target (helpcli when "") and returns
// the fixture with HELPCLI_LOG and the given variables in its environment.
func newFixture(t *testing.T, target string, env ...string) *fixture {
	t.Helper()
	dir := t.TempDir()
	if target == "" {
		target = helpcli
	}
	f := &fixture{t: t, dir: dir, bin: filepath.Join(dir, "helpcli"), log: filepath.Join(dir, "argv.log")}
	if err := os.Symlink(target, f.bin); err != nil {
		t.Fatal(err)
	}
	f.env = append([]string{"HELPCLI_LOG=" + f.log}, env...)
	return f
}

// retarget points the fixture's binary path at target, atomically.
func (f *fixture) retarget(target string) {
	f.t.Helper()
	tmp := f.bin + ".new"
	if err := os.Symlink(target, tmp); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Rename(tmp, f.bin); err != nil {
		f.t.Fatal(err)
	}
}

// tool is a Tool named "cli" for the fixture, needing subs.
func (f *fixture) tool(subs ...[]string) Tool {
	return Tool{Name: "cli", Binary: f.bin, Env: f.env, Subcommands: subs}
}

// argvs returns every argv the fixture was started with, in order.
func (f *fixture) argvs() [][]string {
	f.t.Helper()
	data, err := os.ReadFile(f.log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		f.t.Fatal(err)
	}
	var out [][]string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var argv []string
		if err := json.Unmarshal(sc.Bytes(), &argv); err != nil {
			f.t.Fatalf("argv log line %q: %v", sc.Text(), err)
		}
		out = append(out, argv)
	}
	return out
}

// runs counts the fixture's runs so far.
func (f *fixture) runs() int { return len(f.argvs()) }

// checkForms fails the test when any logged argv is not one of the fixed
// help forms: "--help", "-h", "sub… --help", "sub… -h", "help sub…". Above
// all, "sub… help" must never run.
func (f *fixture) checkForms() {
	f.t.Helper()
	for _, argv := range f.argvs() {
		n := len(argv)
		switch {
		case n == 0:
			f.t.Errorf("ran with no arguments")
		case argv[n-1] == "help":
			f.t.Errorf("ran %q: sub… help must never run", argv)
		case argv[n-1] == "--help" || argv[n-1] == "-h":
			if slices.ContainsFunc(argv[:n-1], func(s string) bool { return strings.HasPrefix(s, "-") }) {
				f.t.Errorf("ran %q: a subcommand token looks like a flag", argv)
			}
		case argv[0] == "help" && n > 1:
		default:
			f.t.Errorf("ran %q, which is not a help form", argv)
		}
	}
}

// learn runs Learn with a bounded context.
func learn(t *testing.T, in *Introspector, force bool, tools ...Tool) *Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	c := in.Learn(ctx, tools, force)
	if ctx.Err() != nil {
		t.Fatalf("Learn did not finish within a minute")
	}
	return c
}

// clock is an adjustable Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// logs collects log records for the tests that check warnings.
type logs struct {
	mu   sync.Mutex
	recs []string
}

func (l *logs) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.recs = append(l.recs, string(p))
		return len(p), nil
	}), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func (l *logs) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.recs, "")
}

type writerFunc func([]byte) (int, error)

func (w writerFunc) Write(p []byte) (int, error) { return w(p) }

var _ io.Writer = writerFunc(nil)
