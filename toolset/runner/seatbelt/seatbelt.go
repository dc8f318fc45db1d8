package seatbelt

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrPath marks a path Profile refuses: empty, relative, not clean, or
// holding NUL. Such a path names nothing the kernel would check, or would be
// cut short by sandbox-exec's C strings, so a rule for it would protect
// nothing while looking as if it did.
var ErrPath = errors.New("seatbelt: unusable path")

// Rules lists what the profile protects. Every entry is an absolute, clean,
// resolved path: the caller has followed symlinks (see Resolve), because on
// macOS /var, /tmp and /etc are links into /private and Seatbelt matches the
// real path, so a rule for an unresolved path matches nothing. Order and
// duplicates do not matter: each list is sorted and deduplicated.
type Rules struct {
	// Hidden are files or whole folders that nothing confined may read,
	// write, create, remove, rename, link, truncate or execute, by any path
	// below them; a unix socket listed here cannot be connected to.
	Hidden []string
	// ReadOnly are executables: reading and executing stay allowed, even
	// when they lie inside a Hidden folder (a tool binary kept in the config
	// folder); writing, truncating, renaming, removing, linking and changing
	// mode or extended attributes do not.
	ReadOnly []string
	// Above are the folders on the way to a protected item ("/" may be among
	// them): the folder itself may not be removed, renamed or replaced, and
	// every other entry in it stays fully usable.
	Above []string
	// Starts are paths whose every extension is hidden as a Hidden item is:
	// a folder and the start of a name ("/p/.config.yaml."), for the files
	// that may become a hidden item by a rename (an atomic write's
	// temporary file, a rotated log) and carry random or counted names,
	// which no literal can name. Each is matched as the start of a path,
	// by a regular expression that Profile builds by quoting every regex
	// metacharacter; a path holding a control character is refused.
	Starts []string
}

// The parameter name prefixes: a path's parameter is its prefix and its index
// in its sorted list. They are fixed words, so the profile text depends only
// on the number of paths of each kind.
const (
	hiddenParam   = "HIDDEN_"
	readOnlyParam = "READONLY_"
	aboveParam    = "ABOVE_"
	startParam    = "START_"
)

// Command returns the argv that runs argv confined by r: sandboxExec, "-p",
// the profile, one "-D", "NAME=path" pair per path, "--", then argv as given.
// sandbox-exec reads its options with getopt, so "--" keeps an argv[0] that
// starts with "-" from being taken for an option; a NAME never holds "=", so
// the first "=" of each pair ends the name whatever the path holds.
// sandboxExec must be absolute, so no PATH lookup can choose the sandbox.
func Command(sandboxExec string, r Rules, argv []string) ([]string, error) {
	if !filepath.IsAbs(sandboxExec) || strings.IndexByte(sandboxExec, 0) >= 0 {
		return nil, fmt.Errorf("seatbelt command: sandbox-exec %s is not an absolute path", strconv.Quote(sandboxExec))
	}
	if len(argv) == 0 {
		return nil, errors.New("seatbelt command: nothing to run")
	}
	profile, params, err := Profile(r)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, 3+2*len(params)+1+len(argv))
	out = append(out, sandboxExec, "-p", profile)
	for _, p := range params {
		out = append(out, "-D", p)
	}
	out = append(out, "--")
	return append(out, argv...), nil
}

// Profile returns the profile text and its -D parameters, each already
// "NAME=value", for r. The text never holds a path: every rule refers to its
// path as (param "NAME").
func Profile(r Rules) (profile string, params []string, err error) {
	hidden, err := clean("hidden", r.Hidden)
	if err != nil {
		return "", nil, err
	}
	readOnly, err := clean("read-only", r.ReadOnly)
	if err != nil {
		return "", nil, err
	}
	above, err := clean("above", r.Above)
	if err != nil {
		return "", nil, err
	}
	starts, err := clean("name-start", r.Starts, true)
	if err != nil {
		return "", nil, err
	}
	for _, l := range []struct {
		prefix string
		paths  []string
	}{{hiddenParam, hidden}, {readOnlyParam, readOnly}, {aboveParam, above}} {
		for i, p := range l.paths {
			params = append(params, l.prefix+strconv.Itoa(i)+"="+p)
		}
	}
	for i, p := range starts {
		params = append(params, startParam+strconv.Itoa(i)+"="+StartPattern(p))
	}
	return text(len(hidden), len(readOnly), len(above), len(starts)), params, nil
}

// StartPattern is the regular expression matching every path that begins
// with p: "^" and p with each of the metacharacters of POSIX extended
// regular expressions (which the sandbox's matcher reads) behind a
// backslash, so every byte of p stands for itself, and each ASCII letter as
// a bracket of both its cases: macOS's file systems ignore case by default,
// so ".CONFIG.YAML.apply-x" opens the same file as ".config.yaml.apply-x",
// and a pattern matched as the path is spelled must take either. (Letters
// beyond ASCII are matched as spelled; the docs say so.)
func StartPattern(p string) string {
	var b strings.Builder
	b.WriteByte('^')
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z':
			b.WriteString("[" + string(c) + string(c-'a'+'A') + "]")
		case 'A' <= c && c <= 'Z':
			b.WriteString("[" + string(c-'A'+'a') + string(c) + "]")
		default:
			if strings.IndexByte(`\.+*?()|[]{}^$`, c) >= 0 {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
	return b.String()
}

// clean checks every path of one list, then sorts and deduplicates it so
// the same Rules always give the same argv.
func clean(kind string, paths []string, start ...bool) ([]string, error) {
	isStart := len(start) > 0 && start[0]
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		var why string
		switch {
		case p == "":
			why = "is empty"
		case strings.IndexByte(p, 0) >= 0:
			why = "holds NUL"
		case !filepath.IsAbs(p):
			why = "is not absolute"
		case isStart && strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			// A regular expression's reading of a control character
			// is the one thing quoting does not settle.
			why = "holds a control character"
		case filepath.Clean(p) != p:
			why = "is not clean"
		}
		if why != "" {
			return nil, fmt.Errorf("%w: %s path %s %s", ErrPath, kind, strconv.Quote(p), why)
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// text writes the profile for nHidden, nReadOnly and nAbove paths. A rule
// with no filter would apply to everything ("(deny file-read*)" denies every
// read), so a section whose list is empty is left out entirely.
//
// Sources for each name, found by searching published profiles (none of this
// has been run on a Mac):
//   - (version 1), (allow default), subpath, literal, file-read*,
//     file-write*, process-exec, and paths passed as (param "NAME") with
//     sandbox-exec's -D NAME=value: Codex CLI's seatbelt_base_policy.sbpl
//     and seatbelt.rs (its WRITABLE_ROOT_n parameters), which in turn cite
//     Chromium's sandbox/policy/mac/common.sb.
//   - Rule order: when several rules match, the last one in the profile
//     wins. WebKit's commit "Sandbox rule related to VMs has incorrect
//     ordering" (WebKit/WebKit#65685, on Apple's own GPUProcess profile) says
//     "the allowing rule should appear last, since the last rule takes
//     precedence", and microsoft/mxc#754 measured "deny then allow, same path"
//     as allowed and "allow then deny" as denied. So the ReadOnly allow comes
//     after the Hidden deny, and every deny after (allow default).
//   - file-map-executable and file-link: published agent and build sandboxes
//     ("(allow file-map-executable (subpath …))", "(deny file-link (subpath
//     …))", "(deny file-link file-clone)").
//   - file-write-unlink is also what rename checks on its source (a measured
//     note in a published agent sandbox: Seatbelt has no file-write-rename
//     operation, and a profile naming one fails to compile).
//   - (remote unix-socket (path-literal (param "NAME"))) on
//     network-outbound: published profiles that allow or deny one socket
//     (the mDNSResponder socket, "(path-literal (param \"PROXY_SOCKET\"))").
//     connect(2) on a unix socket is a network check, not a file one, so the
//     file denies alone would not stop it.
//   - signal and process-info* with (target others) and (target
//     same-sandbox): Codex CLI's base policy allows both for same-sandbox;
//     published profiles deny both for others.
//   - file-mount and file-unmount: Apple's MobileBackup profile (as diffed
//     between macOS releases) and published agent sandboxes "(deny
//     file-mount)".
func text(nHidden, nReadOnly, nAbove, nStarts int) string {
	var b strings.Builder
	b.WriteString("(version 1)\n")
	b.WriteString(";; Everything not named below stays allowed: the policy, not this profile, decides what runs.\n")
	b.WriteString("(allow default)\n")
	if nHidden > 0 {
		b.WriteString(";; wraptool's own files and folders: no read, write, create, remove, rename, link, map or exec below them.\n")
		rule(&b, "deny file-read* file-write* file-link file-map-executable process-exec", "(subpath (param %q))", hiddenParam, nHidden)
		b.WriteString(";; A unix socket among them cannot be connected to by its path.\n")
		rule(&b, "deny network-outbound", "(remote unix-socket (path-literal (param %q)))", hiddenParam, nHidden)
	}
	if nStarts > 0 {
		b.WriteString(";; Files that may become one of them by a rename (atomic writes' temporary files, rotated logs): the same.\n")
		rule(&b, "deny file-read* file-write* file-link file-map-executable process-exec", "(regex (param %q))", startParam, nStarts)
	}
	if nReadOnly > 0 {
		b.WriteString(";; Executables wraptool runs: reading and running stay allowed, even inside a hidden folder (this comes later, so it wins).\n")
		rule(&b, "allow file-read* file-map-executable process-exec", "(literal (param %q))", readOnlyParam, nReadOnly)
		b.WriteString(";; ...but they cannot be written, truncated, renamed, removed, linked, or have their mode or attributes changed.\n")
		rule(&b, "deny file-write* file-link", "(literal (param %q))", readOnlyParam, nReadOnly)
	}
	if nAbove > 0 {
		b.WriteString(";; Folders above a protected item: the folder itself cannot be removed, renamed or replaced; its other entries stay usable.\n")
		rule(&b, "deny file-write-unlink file-write-create", "(literal (param %q))", aboveParam, nAbove)
	}
	b.WriteString(";; Other processes: no signals and no process information outside this sandbox.\n")
	b.WriteString("(deny signal (target others))\n")
	b.WriteString("(deny process-info* (target others))\n")
	b.WriteString("(allow signal (target same-sandbox))\n")
	b.WriteString("(allow process-info* (target same-sandbox))\n")
	b.WriteString(";; The filesystem's topology: no mounting or unmounting.\n")
	b.WriteString("(deny file-mount)\n")
	b.WriteString("(deny file-unmount)\n")
	return b.String()
}

// rule writes one rule over n parameters; filter is a format whose only verb
// takes the parameter's name, which is a fixed prefix and a number.
func rule(b *strings.Builder, head, filter, prefix string, n int) {
	b.WriteString("(" + head + "\n")
	for i := range n {
		b.WriteString("  " + fmt.Sprintf(filter, prefix+strconv.Itoa(i)) + "\n")
	}
	b.WriteString(")\n")
}

// Resolve returns p with its deepest existing ancestor resolved by
// evalSymlinks (filepath.EvalSymlinks in production) and the elements below
// it, which do not exist yet, appended as written: the kernel follows the
// same links when one of them is created later, so the rule matches the path
// it will check. /var/run/wraptool.sock resolves to
// /private/var/run/wraptool.sock on macOS even before the socket exists.
// A path that is not absolute is returned cleaned; Profile refuses it.
func Resolve(p string, evalSymlinks func(string) (string, error)) string {
	p = filepath.Clean(p)
	if !filepath.IsAbs(p) {
		return p
	}
	var tail []string
	for dir := p; ; {
		if real, err := evalSymlinks(dir); err == nil && filepath.IsAbs(real) {
			slices.Reverse(tail)
			return filepath.Join(append([]string{filepath.Clean(real)}, tail...)...)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			// Not even the root resolved: keep the path as it was.
			return p
		}
		tail = append(tail, filepath.Base(dir))
		dir = parent
	}
}
