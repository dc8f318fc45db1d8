package seatbelt

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const sandboxExec = "/usr/bin/sandbox-exec"

// macHome is a macOS home folder: the paths the documentation names for
// wraptool's folders on macOS live below it.
const macHome = "/Users/op"

func TestCommandMatchesGoldenFiles(t *testing.T) {
	t.Parallel()
	support := macHome + "/Library/Application Support/wraptool"
	caches := macHome + "/Library/Caches/wraptool"
	cases := []struct {
		name string
		r    Rules
	}{
		{"empty", Rules{}},
		{"macos-defaults", Rules{
			Hidden: []string{
				support,
				caches,
				support + "/config.yaml",
				support + "/mcp.sock",
				macHome + "/.secrets/wraptool-token",
			},
			ReadOnly: []string{"/usr/local/bin/wraptool", "/opt/homebrew/bin/git", "/usr/bin/git"},
			Above: []string{
				"/", "/Users", macHome, macHome + "/Library", macHome + "/Library/Application Support",
				macHome + "/Library/Caches", macHome + "/.secrets",
			},
		}},
		{"readonly-inside-hidden", Rules{
			Hidden:   []string{support},
			ReadOnly: []string{support + "/bin/notify-hook"},
			Above:    []string{"/", "/Users", macHome, macHome + "/Library", macHome + "/Library/Application Support"},
		}},
		{"beside-a-repository", Rules{
			Hidden: []string{macHome + "/proj/wraptool.yaml"},
			Starts: []string{macHome + "/proj/.wraptool.yaml.", macHome + "/proj/wraptool.yaml.", macHome + "/proj/.wraptool-"},
			Above:  []string{"/", "/Users", macHome, macHome + "/proj"},
		}},
		{"private-var", Rules{
			Hidden: []string{"/private/var/folders/xy/abc123/T/wraptool", "/private/tmp/wraptool.sock"},
			Above:  []string{"/", "/private", "/private/var", "/private/var/folders", "/private/var/folders/xy", "/private/var/folders/xy/abc123", "/private/var/folders/xy/abc123/T", "/private/tmp"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv, err := Command(sandboxExec, tc.r, []string{"/usr/bin/git", "status"})
			if err != nil {
				t.Fatalf("Command: %v", err)
			}
			var got bytes.Buffer
			for _, a := range argv {
				got.WriteString(strconv.Quote(a) + "\n")
			}
			file := filepath.Join("testdata", tc.name+".golden")
			if *update {
				if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("read golden (run with -update to create it): %v", err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Errorf("argv differs from %s (rerun with -update if intended)\ngot:\n%s\nwant:\n%s", file, got.Bytes(), want)
			}
		})
	}
}

// hostile holds one path per byte sequence that means something in SBPL's
// syntax or to a C string reader, each a legal absolute clean path.
var hostile = []string{
	`/Users/op/a"b`,
	`/Users/op/a\b`,
	`/Users/op/a\"`,
	`/Users/op/x")) (allow file-read* (subpath "/Users`,
	`/Users/op/(`,
	`/Users/op/)`,
	`/Users/op/a;b`,
	`/Users/op/#|comment|#`,
	`/Users/op/#"regex"`,
	"/Users/op/new\nline",
	"/Users/op/carriage\rreturn",
	"/Users/op/with space",
	"/Users/op/\xff\xfe\x80",
	"/Users/op/\u202ertl",
	"/Users/op/a=b=c",
	"/Users/op/-D",
	"/Users/op/--",
}

func TestHostilePathsCannotChangeTheProfile(t *testing.T) {
	t.Parallel()
	argvTail := []string{"-p", "(allow default)", "--", "\"\n", "-D", "X=Y"}
	for i, p := range hostile {
		for _, kind := range []string{"hidden", "read-only", "above"} {
			t.Run(fmt.Sprintf("%s path %d %q", kind, i, p), func(t *testing.T) {
				t.Parallel()
				benign := "/Users/op/benign"
				var r, b Rules
				switch kind {
				case "hidden":
					r.Hidden, b.Hidden = []string{p, benign}, []string{"/b1", "/b2"}
				case "read-only":
					r.ReadOnly, b.ReadOnly = []string{p, benign}, []string{"/b1", "/b2"}
				case "above":
					r.Above, b.Above = []string{p, benign}, []string{"/b1", "/b2"}
				}
				argv, err := Command(sandboxExec, r, argvTail)
				if err != nil {
					t.Fatalf("Command: %v", err)
				}
				want, _, err := Profile(b)
				if err != nil {
					t.Fatalf("Profile(benign): %v", err)
				}
				if argv[2] != want {
					t.Errorf("profile for a hostile path differs from the benign one\ngot:\n%s\nwant:\n%s", argv[2], want)
				}
				// The path appears in exactly one argv element, as the whole
				// value after NAME=.
				var holders []string
				for _, a := range argv {
					if strings.Contains(a, p) {
						holders = append(holders, a)
					}
				}
				if len(holders) != 1 || !strings.HasSuffix(holders[0], "="+p) || strings.Contains(strings.TrimSuffix(holders[0], "="+p), p) {
					t.Errorf("path %q appears in %q, want exactly one NAME=path element", p, holders)
				}
				if got := argv[len(argv)-len(argvTail):]; !slices.Equal(got, argvTail) {
					t.Errorf("argv after -- = %q, want %q", got, argvTail)
				}
				if argv[len(argv)-len(argvTail)-1] != "--" {
					t.Errorf("argv before the command = %q, want \"--\"", argv[len(argv)-len(argvTail)-1])
				}
			})
		}
	}
}

func TestUnusablePathsAreRefused(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, why string
	}{
		{"relative", "Users/op/x", "is not absolute"},
		{"dot relative", "./x", "is not absolute"},
		{"dot dot inside", "/a/../b", "is not clean"},
		{"trailing slash", "/a/", "is not clean"},
		{"double slash", "/a//b", "is not clean"},
		{"trailing dot", "/a/.", "is not clean"},
		{"empty", "", "is empty"},
		{"NUL", "/a\x00b", "holds NUL"},
		{"NUL only tail", "/a\x00", "holds NUL"},
	}
	for _, tc := range cases {
		for _, kind := range []string{"hidden", "read-only", "above"} {
			t.Run(tc.name+" in "+kind, func(t *testing.T) {
				t.Parallel()
				var r Rules
				switch kind {
				case "hidden":
					r.Hidden = []string{"/ok", tc.path}
				case "read-only":
					r.ReadOnly = []string{"/ok", tc.path}
				case "above":
					r.Above = []string{"/ok", tc.path}
				}
				argv, err := Command(sandboxExec, r, []string{"/bin/true"})
				if err == nil {
					t.Fatalf("Command accepted %q: %q", tc.path, argv)
				}
				if !errors.Is(err, ErrPath) {
					t.Errorf("error %v does not wrap ErrPath", err)
				}
				want := kind + " path " + strconv.Quote(tc.path) + " " + tc.why
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			})
		}
	}
}

func TestCommandRefusesABadSandboxExecOrNoCommand(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, exec string
		argv       []string
		want       string
	}{
		{"relative sandbox-exec", "sandbox-exec", []string{"/bin/true"}, `sandbox-exec "sandbox-exec" is not an absolute path`},
		{"empty sandbox-exec", "", []string{"/bin/true"}, `sandbox-exec "" is not an absolute path`},
		{"NUL in sandbox-exec", "/usr/bin/sandbox-exec\x00x", []string{"/bin/true"}, `is not an absolute path`},
		{"no command", sandboxExec, nil, "nothing to run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Command(tc.exec, Rules{}, tc.argv)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Command error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestRulesAreSortedAndDeduplicated(t *testing.T) {
	t.Parallel()
	a, errA := Command(sandboxExec, Rules{Hidden: []string{"/b", "/a", "/b"}, Above: []string{"/", "/", "/x"}}, []string{"/bin/true"})
	b, errB := Command(sandboxExec, Rules{Hidden: []string{"/a", "/b"}, Above: []string{"/x", "/"}}, []string{"/bin/true"})
	if errA != nil || errB != nil {
		t.Fatalf("Command: %v, %v", errA, errB)
	}
	if !slices.Equal(a, b) {
		t.Errorf("argv depends on order or duplicates:\n%q\n%q", a, b)
	}
	_, params, _ := Profile(Rules{Hidden: []string{"/b", "/a", "/b"}})
	if want := []string{"HIDDEN_0=/a", "HIDDEN_1=/b"}; !slices.Equal(params, want) {
		t.Errorf("params = %q, want %q", params, want)
	}
}

// An empty list must leave its section out: a rule with no filter applies to
// everything, so "(deny file-read*" with no path would deny every read.
func TestEmptyListsWriteNoUnfilteredRule(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		r    Rules
		gone []string
	}{
		{"no hidden", Rules{ReadOnly: []string{"/x"}, Above: []string{"/"}}, []string{"deny file-read*", "deny network-outbound"}},
		{"no read-only", Rules{Hidden: []string{"/x"}, Above: []string{"/"}}, []string{"allow file-read*", "deny file-write* file-link\n"}},
		{"no above", Rules{Hidden: []string{"/x"}}, []string{"file-write-unlink"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, _, err := Profile(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			for _, g := range tc.gone {
				if strings.Contains(p, g) {
					t.Errorf("profile holds %q with its list empty:\n%s", g, p)
				}
			}
			for _, line := range strings.Split(p, "\n") {
				if strings.HasPrefix(line, "(") && strings.HasSuffix(line, "*") {
					t.Errorf("rule %q has no filter", line)
				}
			}
		})
	}
}

// The ReadOnly allow must come after the Hidden deny: in Seatbelt the last
// matching rule wins, so the other order would leave a tool binary kept in
// the config folder unreadable, or (reversed the other way) re-open writes.
func TestReadOnlyAllowFollowsHiddenDenyAndPrecedesItsWriteDeny(t *testing.T) {
	t.Parallel()
	p, _, err := Profile(Rules{Hidden: []string{"/h"}, ReadOnly: []string{"/h/bin"}})
	if err != nil {
		t.Fatal(err)
	}
	order := []string{
		"(allow default)",
		"(deny file-read* file-write* file-link file-map-executable process-exec\n  (subpath (param \"HIDDEN_0\"))",
		"(allow file-read* file-map-executable process-exec\n  (literal (param \"READONLY_0\"))",
		"(deny file-write* file-link\n  (literal (param \"READONLY_0\"))",
	}
	last := -1
	for _, s := range order {
		at := strings.Index(p, s)
		if at <= last {
			t.Fatalf("%q is missing or out of order in:\n%s", s, p)
		}
		last = at
	}
}

// parse reads argv back as sandbox-exec's getopt would: -p PROFILE, any
// number of -D NAME=VALUE, then "--" and the command.
func parse(argv []string) (profile string, r Rules, cmd []string, err error) {
	if len(argv) == 0 || argv[0] != sandboxExec {
		return "", r, nil, fmt.Errorf("argv[0] = %q", argv)
	}
	i := 1
	for ; i < len(argv); i++ {
		switch argv[i] {
		case "-p":
			if i+1 >= len(argv) {
				return "", r, nil, errors.New("-p without a value")
			}
			i++
			profile = argv[i]
		case "-D":
			if i+1 >= len(argv) {
				return "", r, nil, errors.New("-D without a value")
			}
			i++
			name, value, ok := strings.Cut(argv[i], "=")
			if !ok {
				return "", r, nil, fmt.Errorf("-D %q has no =", argv[i])
			}
			var list *[]string
			var prefix string
			switch {
			case strings.HasPrefix(name, hiddenParam):
				list, prefix = &r.Hidden, hiddenParam
			case strings.HasPrefix(name, readOnlyParam):
				list, prefix = &r.ReadOnly, readOnlyParam
			case strings.HasPrefix(name, aboveParam):
				list, prefix = &r.Above, aboveParam
			default:
				return "", r, nil, fmt.Errorf("unknown parameter %q", name)
			}
			if want := prefix + strconv.Itoa(len(*list)); name != want {
				return "", r, nil, fmt.Errorf("parameter %q, want %q", name, want)
			}
			*list = append(*list, value)
		case "--":
			return profile, r, argv[i+1:], nil
		default:
			return "", r, nil, fmt.Errorf("unexpected option %q", argv[i])
		}
	}
	return "", r, nil, errors.New("no --")
}

// benignProfile is the fixed profile for a shape: the counts of each list.
func benignProfile(t testing.TB, nh, nr, na int) string {
	var b Rules
	for i := range nh {
		b.Hidden = append(b.Hidden, fmt.Sprintf("/h%03d", i))
	}
	for i := range nr {
		b.ReadOnly = append(b.ReadOnly, fmt.Sprintf("/r%03d", i))
	}
	for i := range na {
		b.Above = append(b.Above, fmt.Sprintf("/a%03d", i))
	}
	p, _, err := Profile(b)
	if err != nil {
		t.Fatalf("Profile(benign): %v", err)
	}
	return p
}

// sorted is what Profile makes of a list.
func sorted(l []string) []string {
	l = slices.Clone(l)
	slices.Sort(l)
	return slices.Compact(l)
}

// fuzzSep splits one fuzz string into several paths; it is not valid UTF-8,
// so paths with other invalid bytes are still explored.
const fuzzSep = "\xfe\xfe"

func FuzzCommand(f *testing.F) {
	for _, p := range hostile {
		f.Add(p, "/usr/bin/git", "/", "-x")
	}
	f.Add(macHome+"/Library/Application Support/wraptool"+fuzzSep+macHome+"/Library/Caches/wraptool",
		macHome+"/Library/Application Support/wraptool/bin/hook", "/"+fuzzSep+"/Users"+fuzzSep+macHome, "git")
	f.Add("", "", "", "")
	f.Add("/a/../b", "relative", "/a/", "--")
	f.Add("/a\x00b", "/x", "/x"+fuzzSep+"/x", "\x00")
	f.Fuzz(func(t *testing.T, hidden, readOnly, above, arg string) {
		split := func(s string) []string {
			if s == "" {
				return nil
			}
			return strings.Split(s, fuzzSep)
		}
		r := Rules{Hidden: split(hidden), ReadOnly: split(readOnly), Above: split(above)}
		argv := []string{"/usr/bin/env", arg, "--", "-p"}
		out, err := Command(sandboxExec, r, argv)
		if err != nil {
			if !errors.Is(err, ErrPath) {
				t.Fatalf("error %v does not wrap ErrPath", err)
			}
			return
		}
		profile, back, cmd, perr := parse(out)
		if perr != nil {
			t.Fatalf("argv %q does not parse back: %v", out, perr)
		}
		if !slices.Equal(cmd, argv) {
			t.Fatalf("command = %q, want %q", cmd, argv)
		}
		for _, l := range []struct{ got, want []string }{
			{back.Hidden, sorted(r.Hidden)}, {back.ReadOnly, sorted(r.ReadOnly)}, {back.Above, sorted(r.Above)},
		} {
			if !slices.Equal(l.got, l.want) && (len(l.got) != 0 || len(l.want) != 0) {
				t.Fatalf("rules parsed back = %q, want %q", l.got, l.want)
			}
		}
		fixed := benignProfile(t, len(back.Hidden), len(back.ReadOnly), len(back.Above))
		if profile != fixed {
			t.Fatalf("profile differs from the fixed one for its shape\ngot:\n%s\nwant:\n%s", profile, fixed)
		}
		// The stated invariant, checked directly as well: no path byte
		// sequence of length 2 or more that the fixed profile lacks.
		for _, p := range slices.Concat(back.Hidden, back.ReadOnly, back.Above) {
			if len(p) > 64 {
				p = p[:64]
			}
			for i := 0; i+2 <= len(p); i++ {
				for j := i + 2; j <= len(p); j++ {
					if s := p[i:j]; strings.Contains(profile, s) && !strings.Contains(fixed, s) {
						t.Fatalf("profile holds %q from path %q", s, p)
					}
				}
			}
		}
	})
}

// fakeFS resolves like a macOS root: /var, /tmp and /etc are links into
// /private, and only the listed paths exist.
type fakeFS struct {
	links  map[string]string
	exists map[string]bool
}

func (f fakeFS) eval(p string) (string, error) {
	// Replace the longest linked prefix, as the kernel would walk it.
	out := p
	for from, to := range f.links {
		if out == from || strings.HasPrefix(out, from+"/") {
			out = to + strings.TrimPrefix(out, from)
		}
	}
	if !f.exists[out] {
		return "", &fs.PathError{Op: "lstat", Path: p, Err: fs.ErrNotExist}
	}
	return out, nil
}

func TestResolveFollowsTheDeepestExistingAncestor(t *testing.T) {
	t.Parallel()
	mac := fakeFS{
		links: map[string]string{"/var": "/private/var", "/tmp": "/private/tmp", "/etc": "/private/etc"},
		exists: map[string]bool{
			"/": true, "/private": true, "/private/var": true, "/private/tmp": true, "/private/etc": true,
			"/private/var/folders": true, "/private/var/folders/xy": true,
			"/Users": true, "/Users/op": true, "/Users/op/Library": true,
		},
	}
	cases := []struct {
		name, in, want string
	}{
		{"an existing link", "/var", "/private/var"},
		{"below a link", "/var/folders/xy", "/private/var/folders/xy"},
		{"below a link, last elements missing", "/var/folders/xy/T/wraptool/mcp.sock", "/private/var/folders/xy/T/wraptool/mcp.sock"},
		{"tmp socket not yet made", "/tmp/wraptool.sock", "/private/tmp/wraptool.sock"},
		{"no link on the way", "/Users/op/Library/Caches/wraptool", "/Users/op/Library/Caches/wraptool"},
		{"already resolved", "/private/var/folders", "/private/var/folders"},
		{"nothing exists but the root", "/nowhere/at/all", "/nowhere/at/all"},
		{"the root", "/", "/"},
		{"unclean input is cleaned", "/var//folders/./xy/", "/private/var/folders/xy"},
		{"a name holding a quote", "/tmp/a\"b\nc", "/private/tmp/a\"b\nc"},
		{"relative stays relative", "var/x", "var/x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := Resolve(tc.in, mac.eval); got != tc.want {
				t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// The /var vs /private/var case is the caller's: Profile takes the path it
// is given, so a rule for /var/… would match nothing the kernel checks. This
// pins that Profile does not rewrite it (a hidden fix here would mask a
// caller that forgot Resolve), and that Resolve gives what the kernel sees.
func TestPrivateVarIsTheCallersJob(t *testing.T) {
	t.Parallel()
	_, params, err := Profile(Rules{Hidden: []string{"/var/folders/xy/wraptool"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"HIDDEN_0=/var/folders/xy/wraptool"}; !slices.Equal(params, want) {
		t.Errorf("params = %q, want %q (Profile must not guess at links)", params, want)
	}
	eval := func(p string) (string, error) {
		if p == "/var" || strings.HasPrefix(p, "/var/") {
			return "/private" + p, nil
		}
		return p, nil
	}
	if got := Resolve("/var/folders/xy/wraptool", eval); got != "/private/var/folders/xy/wraptool" {
		t.Errorf("Resolve = %q, want /private/var/folders/xy/wraptool", got)
	}
}

// StartPattern quotes every metacharacter, so each byte of the path
// matches itself and the pattern is anchored at the start.
func TestStartPattern(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ path, want string }{
		{"/p/.c.y.", `^/[pP]/\.[cC]\.[yY]\.`},
		{"/A(b)/x+y*z?", `^/[aA]\([bB]\)/[xX]\+[yY]\*[zZ]\?`},
		{`/\/[1]{2}|3^4$`, `^/\\/\[1\]\{2\}\|3\^4\$`},
		{"/with space/#-9é", "^/[wW][iI][tT][hH] [sS][pP][aA][cC][eE]/#-9é"},
	} {
		if got := StartPattern(tc.path); got != tc.want {
			t.Errorf("StartPattern(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// A name start passes as one START_n parameter holding its quoted pattern;
// hostile bytes leave the profile's text as a benign start's, and a
// control character, which quoting cannot settle, is refused.
func TestHostileStartsCannotChangeTheProfile(t *testing.T) {
	t.Parallel()
	want, _, err := Profile(Rules{Starts: []string{"/b1.", "/b2."}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hostile {
		argv, err := Command(sandboxExec, Rules{Starts: []string{p, "/Users/op/benign."}}, []string{"/bin/true"})
		if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			if !errors.Is(err, ErrPath) || !strings.Contains(err.Error(), "control character") {
				t.Errorf("start %q: err %v, want a refusal naming the control character", p, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("start %q: %v", p, err)
			continue
		}
		if argv[2] != want {
			t.Errorf("start %q changed the profile:\n%s", p, argv[2])
		}
		param := "=" + StartPattern(p)
		n := 0
		for _, a := range argv {
			if strings.HasPrefix(a, "START_") && strings.HasSuffix(a, param) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("start %q: %d START_ parameters hold its pattern, want 1: %q", p, n, argv)
		}
	}
}
