package config

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wraptool/wraptool/policy"
)

// Defaults for fields left unset.
const (
	DefaultTransport   = "sse"
	DefaultLogLevel    = "info"
	DefaultTimeout     = 30 * time.Second
	DefaultInitTimeout = 10 * time.Second
	DefaultCacheTTL    = 24 * time.Hour
	// DefaultAuditLog is the audit log's file name when mcp.audit_log is
	// unset: it lives beside the request log.
	DefaultAuditLog = "audit.jsonl"
	// AuditOff, as mcp.audit_log, disables the audit log.
	AuditOff = "off"
	// DefaultMaxConcurrentCalls bounds the wrapped-tool children running at
	// once when mcp.max_concurrent_calls is unset.
	DefaultMaxConcurrentCalls = 16
)

// The values of mcp.confinement.
const (
	// ConfinementRequired, the default, means every process wraptool
	// starts is confined by the kernel, and a kernel that cannot confine
	// keeps the server from starting.
	ConfinementRequired = "required"
	// ConfinementOff serves without kernel confinement: only the per-call
	// path checks stand between a tool and wraptool's own files.
	ConfinementOff = "off"
)

// ReadFile reads the config's bytes, refusing a file that anyone but its
// owner may write or replace, or that another user owns: the config decides
// what runs, and the server reloads it on every change. A file that cannot be
// read gives an error starting with the path and wrapping the cause
// (fs.ErrNotExist for a missing file); an untrusted one gives an *Error.
func ReadFile(path string) ([]byte, error) {
	if abs, err := filepath.Abs(path); err == nil {
		if msg := checkFile(abs, decides); msg != "" {
			return nil, &Error{File: path, Msg: msg}
		}
	}
	data, err := readRegular(path, maxConfigBytes)
	if err != nil {
		var fe *fileError
		if errors.As(err, &fe) {
			err = fe.Err
		}
		return nil, fmt.Errorf("%s: cannot read config: %w", path, err)
	}
	return data, nil
}

// Parse turns the bytes of file into a complete, valid *Config: strict
// decoding, defaults, "~" and relative paths resolved against file's folder,
// env_files read, help flags seeded, then Validate. file is used as given in
// error messages.
func Parse(file string, data []byte, o *Options) (*Config, error) {
	return parse(file, data, o, nil)
}

// parse is Parse, reading the files the config names from cache when it
// holds them (a grant overlay parses merged bytes of a config already loaded,
// and must see the very files that load read); nil reads them anew.
func parse(file string, data []byte, o *Options, cache *files) (*Config, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, fmt.Errorf("%s: resolve folder: %w", file, err)
	}
	c := &Config{File: file, Dir: dir, lines: newLineIndex(0), files: cache.clone(), opts: o}
	if abs, err := filepath.Abs(file); err == nil {
		c.files.put(abs, data)
	}
	root, err := parseDocument(file, data)
	if err != nil {
		return nil, err
	}
	var structural []*Error
	if root != nil {
		if err := checkServerSection(file, root); err != nil {
			return nil, err
		}
		// Sized up front: grown by append, a 500-tool config's 6 MB
		// index allocated 33 MB; counting takes 3 ms.
		c.lines = newLineIndex(countFields(root))
		w := &walker{file: file, lines: &c.lines}
		w.walk(root, reflect.TypeOf(*c), 0)
		structural = w.errs
		if len(structural) == 0 {
			// Decode the tree already parsed rather than the bytes again
			// (a second parse was a third of a large config's load).
			// Node.Decode has no strict mode, but the walker has checked
			// every key against the same struct tags yaml.v3 reads, so a
			// strict decode would find no unknown field it missed
			// (FuzzStrict holds the two together).
			if err := root.Decode(c); err != nil {
				return nil, yamlError(file, err)
			}
		} else {
			// Decode what can be decoded and check it too, so the problem
			// reported is the first in the file, not the first stage's.
			_ = root.Decode(c)
			fillNil(c)
		}
	}
	for _, t := range c.Tools {
		c.AllowRulesWritten += len(t.Allow)
	}
	problems := c.complete(o)
	SeedHelpFlags(c)
	problems = append(problems, c.problems()...)
	if errs := append(structural, outside(problems, structural)...); len(errs) > 0 {
		return nil, first(errs)
	}
	if err := c.readEnvFiles(); err != nil {
		return nil, err
	}
	return c, nil
}

// outside drops the problems found at or under a field that already has a
// structural error: a field that did not decode is not also "missing".
func outside(problems, structural []*Error) []*Error {
	var kept []*Error
	for _, p := range problems {
		if !slices.ContainsFunc(structural, func(s *Error) bool { return under(p.Path, s.Path) }) {
			kept = append(kept, p)
		}
	}
	return kept
}

// under reports whether path p is s or lies below it.
func under(p, s string) bool {
	if !strings.HasPrefix(p, s) {
		return false
	}
	return len(p) == len(s) || s == "" || p[len(s)] == '.' || p[len(s)] == '['
}

// fillNil replaces the nil entries a lenient decode leaves for empty
// mappings ("tools: {git: }"), so later checks need no nil guards. The walker
// has already reported each of them.
func fillNil(c *Config) {
	for i, ec := range c.MCP.ElicitClients {
		if ec == nil {
			c.MCP.ElicitClients[i] = &ElicitClient{}
		}
	}
	for name, t := range c.Tools {
		if t == nil {
			t = &Tool{}
			c.Tools[name] = t
		}
		for i, r := range t.Allow {
			if r == nil {
				r = &policy.AllowRule{}
				t.Allow[i] = r
			}
			for f, k := range r.FlagConstraints {
				if k == nil {
					r.FlagConstraints[f] = &policy.Constraint{}
				}
			}
		}
		for i, r := range t.Deny {
			if r == nil {
				t.Deny[i] = &policy.DenyRule{}
			}
		}
	}
	for name, s := range c.MCPServers {
		if s == nil {
			s = &MCPServer{}
			c.MCPServers[name] = s
		}
		for _, refs := range [][]*ToolRef{s.Allow, s.Deny} {
			for i, r := range refs {
				if r == nil {
					refs[i] = &ToolRef{}
				}
			}
		}
	}
}

// parseDocument returns the root node of the single document in data, or nil
// for an empty one.
func parseDocument(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(file, data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return nil, &Error{File: file, Line: extra.Line, Msg: "only one YAML document is allowed"}
	case !errors.Is(err, io.EOF):
		return nil, yamlError(file, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: root.Line, Msg: "the config must be a mapping (mcp:, admin:, tools:, mcp_servers:), got " + describe(root)}
	}
	return root, nil
}

var yamlLine = regexp.MustCompile(`(?s)^(?:yaml: )?(?:unmarshal errors:\s*)?line (\d+): (.*)$`)

// yamlError places a yaml.v3 error at its line.
func yamlError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{File: file, Line: line, Msg: m[2]}
	}
	return &Error{File: file, Msg: msg}
}

// syntaxError places a YAML syntax error at the line that is wrong, with the
// field path around it. yaml.v3 reports the line where the enclosing block
// began (a mis-indented key in the third list item is reported at the
// list's first line), so the line is found again: the first line whose
// prefix of the file fails with exactly the same error (at the same
// reported line) is the one that broke it; a binary search needs
// O(log lines) parses. The path is that of the last field before it, read
// from the prefix that still parses. Errors without a line are as yaml.v3
// gives them.
func syntaxError(file string, data []byte, err error) *Error {
	e := yamlError(file, err)
	if e.Line == 0 || len(data) > maxSyntaxSearch {
		return e
	}
	var ends []int // ends[i] is the offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	same := func(n int) bool { // the first n lines fail as the file does
		var node yaml.Node
		perr := yaml.NewDecoder(bytes.NewReader(data[:ends[n-1]])).Decode(&node)
		return perr != nil && perr.Error() == err.Error()
	}
	lo, hi := min(e.Line, len(ends)), len(ends) // same(hi) holds: it is the file
	for lo < hi {
		mid := lo + (hi-lo)/2
		if same(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	e.Line = hi
	if hi > 1 {
		var doc yaml.Node
		if yaml.NewDecoder(bytes.NewReader(data[:ends[hi-2]])).Decode(&doc) == nil && len(doc.Content) == 1 {
			e.Path = lastPath(fieldPath{}, doc.Content[0]).String()
		}
	}
	e.Msg = "YAML syntax: " + e.Msg
	return e
}

// maxSyntaxSearch bounds the file a syntax error's line is searched in: a
// 1 MB config takes about 6 s of parses on a slow machine (0.9 s for the one
// parse), and a reload waits for it; beyond this yaml.v3's line stands.
const maxSyntaxSearch = 256 << 10

// lastPath is the path of the last field n holds, going down through the
// last entry of each block mapping and list (not into a flow one such as
// [status], whose path says no more than its key's): the field just before
// where a truncated document ends.
func lastPath(p fieldPath, n *yaml.Node) fieldPath {
	for depth := 0; depth < 100; depth++ { // a bound, whatever the nesting
		switch {
		case n.Style&yaml.FlowStyle != 0:
			return p
		case n.Kind == yaml.MappingNode && len(n.Content) >= 2:
			k := n.Content[len(n.Content)-2]
			p, n = p.key(k.Value), n.Content[len(n.Content)-1]
		case n.Kind == yaml.SequenceNode && len(n.Content) > 0:
			p, n = p.index(len(n.Content)-1), n.Content[len(n.Content)-1]
		default:
			return p
		}
	}
	return p
}

// first returns the error earliest in the document; errors without a line
// come last, and a tie goes to the path that sorts first, so the answer never
// depends on map iteration order.
func first(errs []*Error) *Error {
	return slices.MinFunc(errs, func(a, b *Error) int {
		if (a.Line == 0) != (b.Line == 0) {
			return cmp.Compare(b.Line, a.Line) // a zero line sorts last
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.col, b.col),
			cmp.Compare(a.Path, b.Path), cmp.Compare(a.Msg, b.Msg))
	})
}

// written reports whether the operator wrote p, which tells an explicit zero
// (an error for a duration) from an unset field (which takes the default).
func (c *Config) written(p fieldPath) bool {
	return c.lines.written(p)
}

// complete applies defaults and resolves every path field: "~" expands to the
// home directory, and a relative path is taken relative to the config file's
// folder (binary excepted: it must be absolute).
func (c *Config) complete(o *Options) []*Error {
	var errs []*Error
	fail := func(p fieldPath, err error) {
		errs = append(errs, c.errorAt(p, "%v", err))
	}
	resolve := func(p fieldPath, s *string, relative bool) {
		if *s == "" {
			return
		}
		if strings.HasPrefix(*s, "~") && *s != "~" && !strings.HasPrefix(*s, "~/") {
			fail(p, fmt.Errorf("only ~ and ~/ are expanded, got %q", *s))
			return
		}
		v, err := ExpandHome(*s, o)
		if err != nil {
			fail(p, fmt.Errorf("cannot expand %q: %w", *s, err))
			return
		}
		if relative && !filepath.IsAbs(v) {
			v = filepath.Join(c.Dir, v)
		}
		*s = v
	}
	duration := func(p fieldPath, d *time.Duration, def time.Duration) {
		if *d == 0 && !c.written(p) {
			*d = def
		}
	}

	mp := fieldPath{}.key("mcp")
	if c.MCP.Transport == "" {
		c.MCP.Transport = DefaultTransport
	}
	if c.MCP.LogLevel == "" {
		c.MCP.LogLevel = DefaultLogLevel
	}
	if c.MCP.Confinement == "" {
		c.MCP.Confinement = ConfinementRequired
	}
	if c.MCP.MaxConcurrentCalls == 0 && !c.written(mp.key("max_concurrent_calls")) {
		c.MCP.MaxConcurrentCalls = DefaultMaxConcurrentCalls
	}
	if c.MCP.Transport == "unix" {
		resolve(mp.key("listen"), &c.MCP.Listen, true)
	}
	resolve(mp.key("auth_token_file"), &c.MCP.AuthTokenFile, true)
	if c.MCP.RequestLog == "" {
		dir, err := DataDir(o)
		if err != nil {
			fail(mp.key("request_log"), fmt.Errorf("no default location: %w", err))
		}
		c.MCP.RequestLog = filepath.Join(dir, "requests.jsonl")
	}
	resolve(mp.key("request_log"), &c.MCP.RequestLog, true)
	switch c.MCP.AuditLog {
	case AuditOff:
	case "":
		// Beside the request log: one folder holds what was asked and
		// what ran, and wraptool protects that folder from its tools.
		c.MCP.AuditLog = filepath.Join(filepath.Dir(c.MCP.RequestLog), DefaultAuditLog)
	default:
		resolve(mp.key("audit_log"), &c.MCP.AuditLog, true)
	}
	for i := range c.MCP.AllowedCwdRoots {
		resolve(mp.key("allowed_cwd_roots").index(i), &c.MCP.AllowedCwdRoots[i], true)
	}
	resolve(fieldPath{}.key("admin").key("auth_token_file"), &c.Admin.AuthTokenFile, true)
	for i, ec := range c.MCP.ElicitClients {
		resolve(mp.key("elicit_clients").index(i).key("token_file"), &ec.TokenFile, true)
	}
	if len(c.MCP.OnRequest) > 0 {
		// The hook's command: "~" expands, and a path with a slash is
		// taken from the config's folder (validate then checks the
		// file); a bare name is looked up in PATH when it runs, as a
		// tool's binary never is.
		resolve(mp.key("on_request").index(0), &c.MCP.OnRequest[0], strings.Contains(c.MCP.OnRequest[0], "/"))
	}

	for name, t := range c.Tools {
		tp := fieldPath{}.key("tools").key(name)
		resolve(tp.key("binary"), &t.Binary, false)
		resolve(tp.key("working_dir"), &t.WorkingDir, true)
		for i := range t.EnvFiles {
			resolve(tp.key("env_files").index(i), &t.EnvFiles[i], true)
		}
		resolve(tp.key("introspection").key("overrides_file"), &t.Introspection.OverridesFile, true)
		duration(tp.key("timeout"), &t.Timeout, DefaultTimeout)
		duration(tp.key("introspection").key("cache_ttl"), &t.Introspection.CacheTTL, DefaultCacheTTL)
	}
	for name, s := range c.MCPServers {
		sp := fieldPath{}.key("mcp_servers").key(name)
		resolve(sp.key("command"), &s.Command, false)
		resolve(sp.key("working_dir"), &s.WorkingDir, true)
		for i := range s.EnvFiles {
			resolve(sp.key("env_files").index(i), &s.EnvFiles[i], true)
		}
		duration(sp.key("timeout"), &s.Timeout, DefaultTimeout)
		duration(sp.key("init_timeout"), &s.InitTimeout, DefaultInitTimeout)
		if s.NamePrefix == "" && !c.written(sp.key("name_prefix")) {
			s.NamePrefix = name
		}
	}
	return errs
}

// readEnvFiles merges each tool's and server's env_files, left to right.
func (c *Config) readEnvFiles() error {
	read := func(p fieldPath, files []string) (map[string]string, error) {
		env := map[string]string{}
		for i, f := range files {
			vars, err := c.readEnvFile(f)
			if err != nil {
				return nil, c.errorAt(p.index(i), "%v", err)
			}
			for k, v := range vars {
				env[k] = v
			}
		}
		return env, nil
	}
	var err error
	for name, t := range c.Tools {
		if t.FileEnv, err = read(fieldPath{}.key("tools").key(name).key("env_files"), t.EnvFiles); err != nil {
			return err
		}
	}
	for name, s := range c.MCPServers {
		if s.FileEnv, err = read(fieldPath{}.key("mcp_servers").key(name).key("env_files"), s.EnvFiles); err != nil {
			return err
		}
	}
	return nil
}

// readEnvFile reads and parses one env file, once per load.
func (c *Config) readEnvFile(path string) (map[string]string, error) {
	data, err := c.fileSet().get(path, maxEnvBytes)
	if err != nil {
		return nil, fmt.Errorf("cannot read env file %w", err)
	}
	return ParseEnvFile(path, data)
}

// errorAt builds an *Error placed at p.
func (c *Config) errorAt(p fieldPath, format string, args ...any) *Error {
	at := c.lines.at(p)
	return &Error{File: c.File, Line: at.line, col: at.col, Path: p.String(), Msg: fmt.Sprintf(format, args...)}
}
