// Package service renders what starts `wraptool serve` at login: a systemd
// user unit on Linux and a launchd agent on macOS. The renderers are pure
// functions of a Spec, so both formats are tested on any system; every value
// is quoted or escaped for its format, and a value no format can hold safely
// (a relative path, a control character, invalid UTF-8) is refused.
//
// Nothing here is concurrent; every function is safe to call from any
// goroutine.
package service

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unit and Label name what install writes: the systemd unit and the launchd
// job label (the plist file is Label + ".plist").
const (
	Unit  = "wraptool.service"
	Label = "dev.wraptool.serve"
)

// Marker is the first line of every file wraptool writes, in the format's
// comment syntax: install replaces, and uninstall removes, only a file that
// carries it, never one the operator wrote.
const Marker = "written by `wraptool service install`; `wraptool service uninstall` removes it"

// Spec is what the service runs.
type Spec struct {
	// Binary is the absolute path of the wraptool to run; never a go run
	// build, which its cache cleaner removes.
	Binary string
	// Config is the absolute path of the config serve loads.
	Config string
	// Env is set in the service's environment (HOME, PATH); nil sets
	// nothing beyond what the service manager gives.
	Env []Var
	// Log is the absolute file launchd appends stdout and stderr to; ""
	// leaves them unset. systemd sends both to the journal, so the unit
	// ignores it.
	Log string
}

// Var is one environment variable of the service.
type Var struct{ Name, Value string }

// ErrUnsafe is a value the renderers refuse: no quoting of the format can
// carry it faithfully, or it is not what it must be (an absolute path).
var ErrUnsafe = errors.New("cannot be written safely")

var varName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// check refuses what neither format may hold: a relative path, invalid
// UTF-8, and control characters (a newline would end a unit's line; XML 1.0
// cannot carry most controls at all).
func (s Spec) check() error {
	paths := []struct{ what, v string }{{"binary", s.Binary}, {"config", s.Config}}
	if s.Log != "" {
		paths = append(paths, struct{ what, v string }{"log", s.Log})
	}
	for _, p := range paths {
		if err := checkValue(p.what, p.v); err != nil {
			return err
		}
		if !filepath.IsAbs(p.v) || filepath.Clean(p.v) != p.v {
			return fmt.Errorf("%s path %q: %w: not a clean absolute path", p.what, p.v, ErrUnsafe)
		}
	}
	for _, v := range s.Env {
		if !varName.MatchString(v.Name) {
			return fmt.Errorf("environment variable name %q: %w: not [A-Za-z_][A-Za-z0-9_]*", v.Name, ErrUnsafe)
		}
		if err := checkValue(v.Name, v.Value); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(what, v string) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s %q: %w: not valid UTF-8", what, v, ErrUnsafe)
	}
	for _, r := range v {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || r == '\ufffe' || r == '\uffff' {
			return fmt.Errorf("%s %q: %w: it holds the control character %U", what, v, ErrUnsafe, r)
		}
	}
	return nil
}

// SystemdUnit renders the user unit. Each word of ExecStart is a
// double-quoted string, so spaces and quotes stay inside one argument:
// backslash and double quote are backslash-escaped, `%` (a specifier) is
// doubled and `$` (a variable reference) is doubled. Environment= values are
// quoted the same way but not variable-expanded, so there only `%` doubles.
func SystemdUnit(s Spec) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	if i := strings.IndexAny(s.Binary, unitProgramRefuses); i >= 0 {
		return "", fmt.Errorf("binary path %q: %w in a systemd unit: it holds %q, which systemd refuses in a program's path; "+
			"install wraptool to a path without one", s.Binary, ErrUnsafe, s.Binary[i:i+1])
	}
	var b strings.Builder
	b.WriteString("# " + Marker + "\n")
	// The config path again, Go-quoted on a comment line, for status to read
	// back without parsing ExecStart's quoting.
	b.WriteString("# config: " + strconv.Quote(s.Config) + "\n")
	b.WriteString("[Unit]\n")
	b.WriteString("Description=wraptool: the MCP gate to credentialed CLIs\n")
	// Restarting on failure, at most 5 starts in 5 minutes: a config that
	// fails at every start stops being retried instead of looping.
	b.WriteString("StartLimitIntervalSec=300\nStartLimitBurst=5\n\n")
	b.WriteString("[Service]\n")
	b.WriteString("Type=simple\n")
	b.WriteString("ExecStart=" + strings.Join([]string{execWord(s.Binary), execWord("--config"), execWord(s.Config), execWord("serve")}, " ") + "\n")
	b.WriteString("ExecReload=/bin/kill -HUP $MAINPID\n")
	for _, v := range s.Env {
		b.WriteString("Environment=" + quoteSystemd(v.Name+"="+v.Value, false) + "\n")
	}
	b.WriteString("Restart=on-failure\nRestartSec=5s\n")
	// serve's grace period on SIGTERM is 10 s; leave it room.
	b.WriteString("TimeoutStopSec=30s\n\n")
	b.WriteString("[Install]\nWantedBy=default.target\n")
	return b.String(), nil
}

// unitProgramRefuses are what a unit's program path cannot hold: systemd
// rejects quotes and backslashes there ("special characters"), and it
// takes the path literally but expands variables in argv[0], the same
// word, so no one spelling of `$` is right for both.
const unitProgramRefuses = `$\"'`

func execWord(s string) string { return quoteSystemd(s, true) }

// quoteSystemd double-quotes s for a unit file line; dollar doubles `$`
// too, for the lines that expand variables (ExecStart).
func quoteSystemd(s string, dollar bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '%':
			b.WriteString("%%")
		case r == '$' && dollar:
			b.WriteString("$$")
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ConfigOfUnit reads back the config path a unit SystemdUnit rendered
// names; ok is false for a unit wraptool did not write.
func ConfigOfUnit(unit []byte) (config string, ok bool) {
	if !IsOurs(unit) {
		return "", false
	}
	for _, line := range strings.Split(string(unit), "\n") {
		if q, found := strings.CutPrefix(line, "# config: "); found {
			c, err := strconv.Unquote(q)
			return c, err == nil
		}
	}
	return "", false
}

// IsOurs reports whether a unit or plist starts with the marker install
// writes.
func IsOurs(content []byte) bool {
	first, rest, _ := bytes.Cut(content, []byte("\n"))
	if bytes.HasPrefix(first, []byte("<?xml")) {
		second, _, _ := bytes.Cut(rest, []byte("\n"))
		return string(second) == "<!-- "+xmlMarker+" -->"
	}
	return string(first) == "# "+Marker
}

// xmlMarker is Marker for an XML comment, which may not hold "--".
var xmlMarker = strings.ReplaceAll(Marker, "`", "")

// LaunchdPlist renders the launchd agent. Every string is XML-escaped
// (`&`, `<`, `>`, quotes); the arguments are an array, so no shell ever
// splits them.
func LaunchdPlist(s Spec) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	b.WriteString("<!-- " + xmlMarker + " -->\n")
	b.WriteString(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">` + "\n")
	b.WriteString(`<plist version="1.0">` + "\n<dict>\n")
	key := func(k string) { b.WriteString("  <key>" + xmlEscape(k) + "</key>\n") }
	str := func(indent, v string) { b.WriteString(indent + "<string>" + xmlEscape(v) + "</string>\n") }
	key("Label")
	str("  ", Label)
	key("ProgramArguments")
	b.WriteString("  <array>\n")
	for _, arg := range []string{s.Binary, "--config", s.Config, "serve"} {
		str("    ", arg)
	}
	b.WriteString("  </array>\n")
	if len(s.Env) > 0 {
		key("EnvironmentVariables")
		b.WriteString("  <dict>\n")
		for _, v := range s.Env {
			b.WriteString("    <key>" + xmlEscape(v.Name) + "</key>\n")
			str("    ", v.Value)
		}
		b.WriteString("  </dict>\n")
	}
	key("RunAtLoad")
	b.WriteString("  <true/>\n")
	// Restart only after a failure (a clean SIGTERM exit stays stopped),
	// no sooner than 10 s after the last start.
	key("KeepAlive")
	b.WriteString("  <dict>\n    <key>SuccessfulExit</key>\n    <false/>\n  </dict>\n")
	key("ThrottleInterval")
	b.WriteString("  <integer>10</integer>\n")
	if s.Log != "" {
		key("StandardOutPath")
		str("  ", s.Log)
		key("StandardErrorPath")
		str("  ", s.Log)
	}
	b.WriteString("</dict>\n</plist>\n")
	return b.String(), nil
}

func xmlEscape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// ProgramArguments reads a plist's ProgramArguments array with
// encoding/xml: what launchd will run, for status and for tests.
func ProgramArguments(plist []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(plist))
	d.Strict = true
	var (
		lastKey, text string
		inArgs        bool
		args          []string
		depth         int
		argsDepth     int
	)
	for {
		tok, err := d.Token()
		if err != nil {
			if inArgs || args == nil {
				return nil, fmt.Errorf("read plist: no complete ProgramArguments array: %w", err)
			}
			return args, nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			text = ""
			if t.Name.Local == "array" && lastKey == "ProgramArguments" && depth == 3 {
				inArgs, argsDepth, args = true, depth, []string{}
			}
		case xml.CharData:
			text += string(t)
		case xml.EndElement:
			switch {
			case t.Name.Local == "key" && depth == 3:
				lastKey = text
			case inArgs && t.Name.Local == "string" && depth == argsDepth+1:
				args = append(args, text)
			case inArgs && t.Name.Local == "array" && depth == argsDepth:
				inArgs = false
				lastKey = ""
			case t.Name.Local != "key" && depth == 3:
				lastKey = ""
			}
			depth--
		}
	}
}

// ConfigOfPlist is the config path a plist's ProgramArguments name after
// --config; ok is false for a plist wraptool did not write.
func ConfigOfPlist(plist []byte) (config string, ok bool) {
	if !IsOurs(plist) {
		return "", false
	}
	args, err := ProgramArguments(plist)
	if err != nil {
		return "", false
	}
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--config" {
			return args[i+1], true
		}
	}
	return "", false
}
