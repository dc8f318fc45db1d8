package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The checks of the mcp: and admin: sections: listeners, token files, the
// request and audit logs, elicitation clients and the operator's hook.

func (v *validator) mcp() {
	m, p := &v.c.MCP, fieldPath{}.key("mcp")
	switch m.Transport {
	case "sse", "unix":
	default:
		v.fail(p.key("transport"), "unknown transport %q (want sse or unix)", m.Transport)
	}
	switch {
	case m.Listen == "":
		v.fail(p.key("listen"), "is required: host:port for sse, a socket path for unix")
	case m.Transport == "sse":
		host, err := splitHostPort(m.Listen)
		if err != nil {
			v.fail(p.key("listen"), "%v", err)
		} else if m.AuthTokenFile == "" && !IsLoopback(host) {
			v.fail(p.key("listen"), "%s is not a loopback address, so mcp.auth_token_file is required", m.Listen)
		}
	}
	switch m.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		v.fail(p.key("log_level"), "unknown log level %q (want debug, info, warn or error)", m.LogLevel)
	}
	switch m.Confinement {
	case ConfinementRequired, ConfinementOff:
	default:
		v.fail(p.key("confinement"), "unknown confinement %q (want %s or %s)", m.Confinement, ConfinementRequired, ConfinementOff)
	}
	for i, r := range m.AllowedCwdRoots {
		v.dir(p.key("allowed_cwd_roots").index(i), r)
	}
	if m.MaxConcurrentCalls < 1 {
		v.fail(p.key("max_concurrent_calls"), "must be at least 1, got %d", m.MaxConcurrentCalls)
	}
	if info, err := os.Stat(m.RequestLog); err == nil && info.IsDir() {
		v.fail(p.key("request_log"), "%s is a directory", m.RequestLog)
	} else {
		// The request log carries decisions (and grants): it decides what
		// runs, like the config.
		v.private(p.key("request_log"), m.RequestLog, decides)
		// The grants key signs every grant: a key others may read lets
		// them forge one.
		v.private(p.key("request_log"), GrantsKeyPath(m.RequestLog), secret)
		// The sessions kept for a restart say who may resume which one.
		v.private(p.key("request_log"), SessionsPath(m.RequestLog), secret)
	}
	v.auditLog(p.key("audit_log"), m)
	v.tokenFile(p.key("auth_token_file"), m.AuthTokenFile)
	v.onRequest(p.key("on_request"), m.OnRequest)
	names := map[string]bool{}
	for i, ec := range m.ElicitClients {
		ep := p.key("elicit_clients").index(i)
		switch {
		case ec.Name == "":
			v.fail(ep.key("name"), "is required: it is shown in the client's prompt and recorded with its decisions")
		case !validClientName(ec.Name):
			v.fail(ep.key("name"), "%q must be 1 to 64 characters: letters, digits, spaces and _ . - (it is shown in the client's prompt)", ec.Name)
		case names[ec.Name]:
			v.fail(ep.key("name"), "%q is listed twice", ec.Name)
		}
		names[ec.Name] = true
		if ec.TokenFile == "" {
			v.fail(ep.key("token_file"), "is required: the client's own bearer token")
			continue
		}
		v.tokenFile(ep.key("token_file"), ec.TokenFile)
	}
	v.distinctTokens()
}

// auditLog checks mcp.audit_log: a file of its own, not the request log
// (their lines differ, and readers of either would skip the other's), nor
// a directory.
func (v *validator) auditLog(p fieldPath, m *MCP) {
	if m.AuditLog == AuditOff || m.AuditLog == "" {
		return
	}
	if same(m.AuditLog, m.RequestLog) {
		v.fail(p, "%s is the request log; the audit log needs a file of its own (or \"off\")", m.AuditLog)
		return
	}
	if info, err := os.Stat(m.AuditLog); err == nil && info.IsDir() {
		v.fail(p, "%s is a directory", m.AuditLog)
	}
}

// same reports whether a and b name one file: equal once cleaned, or the
// same file on disk.
func same(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ai, aerr := os.Stat(a)
	bi, berr := os.Stat(b)
	return aerr == nil && berr == nil && os.SameFile(ai, bi)
}

// validClientName accepts what may stand in a prompt and a decision line:
// printable ASCII words, nothing that could fake a line or hide text.
func validClientName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == ' ' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// distinctTokens refuses two token files (MCP, admin, elicitation clients)
// that are the same file or hold the same token: a token identifies who
// may do what, so one must never stand for two.
func (v *validator) distinctTokens() {
	type named struct {
		path fieldPath
		file string
	}
	var all []named
	if f := v.c.MCP.AuthTokenFile; f != "" {
		all = append(all, named{fieldPath{}.key("mcp").key("auth_token_file"), f})
	}
	for i, ec := range v.c.MCP.ElicitClients {
		if ec.TokenFile != "" {
			all = append(all, named{fieldPath{}.key("mcp").key("elicit_clients").index(i).key("token_file"), ec.TokenFile})
		}
	}
	if f := v.c.Admin.AuthTokenFile; f != "" {
		// The admin pair is checked by admin(), with its own message.
		all = append(all, named{fieldPath{}.key("admin").key("auth_token_file"), f})
	}
	for i := 1; i < len(all); i++ {
		for j := 0; j < i; j++ {
			a, b := all[j], all[i]
			if a.path.String() == "mcp.auth_token_file" && b.path.String() == "admin.auth_token_file" {
				continue
			}
			if a.file == b.file {
				v.fail(b.path, "must not be the same file as %s: each token must differ", a.path)
				continue
			}
			at, aerr := v.c.readToken(a.file)
			bt, berr := v.c.readToken(b.file)
			if aerr == nil && berr == nil && at == bt {
				v.fail(b.path, "holds the same token as %s: each token must differ", a.path)
			}
		}
	}
}

// summaryPlaceholders were the hook's placeholders for the assistant's
// words. No argument may carry them: a program that runs its arguments as a
// command (rbash -c, setpriv sh -c, make -E) would run a $(…) rationale, and
// no list of such programs can be complete.
var summaryPlaceholders = []string{"{summary}", "{summary_json}"}

// onRequest checks the operator's hook: no argument that would carry the
// assistant's words, not wraptool itself, and a program (and any script it
// is given) that only the operator or root can change.
func (v *validator) onRequest(p fieldPath, argv []string) {
	if len(argv) == 0 {
		return
	}
	for i, a := range argv {
		for _, ph := range summaryPlaceholders {
			if strings.Contains(a, ph) {
				v.fail(p.index(i), "%q: %s is not a placeholder: no argument ever carries the assistant's words (a shell or a program "+
					"that runs its arguments would run them); the summary is in the hook's environment as WRAPTOOL_SUMMARY and the "+
					"request's JSON line on its stdin, e.g. [\"/bin/sh\", \"-c\", \"notify-send wraptool \\\"$WRAPTOOL_SUMMARY\\\"\"]", a, ph)
				return
			}
		}
	}
	if argv[0] == "" {
		v.fail(p.index(0), "is empty: the hook's first element is its command")
		return
	}
	if filepath.Base(argv[0]) == "wraptool" || isSelf(argv[0]) {
		v.fail(p.index(0), "%q is wraptool itself: a hook that decides requests would approve whatever the assistant asks", argv[0])
		return
	}
	if strings.Contains(argv[0], "/") {
		// A path (load made it absolute): the file must be an
		// executable only the operator can change, as a tool's binary.
		v.executable(p.index(0), argv[0])
	} else if cmd, ok := lookCommand(argv[0], "", v.c.opts, nil, nil); ok {
		// A bare name is found where the hook will find it; one not
		// found is logged when the hook runs.
		if isSelf(cmd) {
			v.fail(p.index(0), "%q is wraptool itself (%s): a hook that decides requests would approve whatever the assistant asks", argv[0], cmd)
			return
		}
		v.program(p.index(0), cmd)
	}
	// A script the hook is given (python3 notify.py) decides what runs as
	// much as its command; the hook runs in the config's folder.
	v.scripts(argv[1:], v.c.Dir, func(i int) fieldPath { return p.index(i + 1) })
}

func (v *validator) admin() {
	a, p := &v.c.Admin, fieldPath{}.key("admin")
	if a.Listen != "" {
		if _, err := splitHostPort(a.Listen); err != nil {
			v.fail(p.key("listen"), "%v", err)
		}
		if a.AuthTokenFile == "" {
			v.fail(p.key("auth_token_file"), "is required when admin.listen is set")
		}
	}
	v.tokenFile(p.key("auth_token_file"), a.AuthTokenFile)
	mcpTok := v.c.MCP.AuthTokenFile
	if a.AuthTokenFile == "" || mcpTok == "" {
		return
	}
	if a.AuthTokenFile == mcpTok {
		v.fail(p.key("auth_token_file"), "must not be the same file as mcp.auth_token_file: the admin token must differ from the MCP token")
		return
	}
	at, aerr := v.c.readToken(a.AuthTokenFile)
	mt, merr := v.c.readToken(mcpTok)
	if aerr == nil && merr == nil && at == mt {
		v.fail(p.key("auth_token_file"), "holds the same token as mcp.auth_token_file: the admin token must differ from the MCP token")
	}
}

// tokenFile accepts a missing file (serve creates it) but not an empty or
// unreadable one.
func (v *validator) tokenFile(p fieldPath, path string) {
	if path == "" {
		return
	}
	_, err := v.c.readToken(path)
	switch {
	case err == nil, errors.Is(err, fs.ErrNotExist):
		v.private(p, path, secret)
	default:
		v.fail(p, "%v", err)
	}
}

// splitHostPort checks a host:port listen address and returns the host.
func splitHostPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("want host:port, got %q", addr)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", fmt.Errorf("port %q in %q must be a number from 0 to 65535", port, addr)
	}
	return host, nil
}

// IsLoopback reports whether host names the local machine only: "localhost"
// or a loopback IP. An empty host listens on every interface and is not.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
