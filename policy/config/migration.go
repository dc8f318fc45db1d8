package config

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// migrations maps each key of the retired server: section to its home now.
// The error prints them as a table in this order, the transport first.
var migrations = [...]struct{ from, to string }{
	{"server.transport", "mcp.transport"},
	{"server.listen", "mcp.listen"},
	{"server.auth_token_file", "mcp.auth_token_file"},
	{"server.request_log", "mcp.request_log"},
	{"server.allowed_cwd_roots", "mcp.allowed_cwd_roots"},
	{"server.web.listen", "admin.listen"},
	{"server.web.auth_token_file", "admin.auth_token_file"},
}

// MigrationTable is the text printed under a server: error: one line per
// retired key with its replacement.
func MigrationTable() string {
	var b strings.Builder
	b.WriteString("The server section was split into mcp and admin; move each key:")
	for _, m := range migrations {
		fmt.Fprintf(&b, "\n  %-27s → %s", m.from, m.to)
	}
	return b.String()
}

// checkServerSection refuses a top-level server: key. The first line names
// the first retired key found in document order and where it goes, so the
// operator can fix the file one line at a time; the table follows.
func checkServerSection(file string, root *yaml.Node) error {
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != "server" {
			continue
		}
		e := &Error{
			File: file, Line: k.Line, Path: "server",
			Msg:    "the server section is not supported: move MCP settings to mcp and server.web to admin",
			Detail: MigrationTable(),
			Err:    ErrServerSection,
		}
		if n, from, to := firstMigrated(v, "server"); n != nil {
			e.Line, e.Path = n.Line, from
			e.Msg = fmt.Sprintf("the server section is not supported: move %s to %s", from, to)
		}
		return e
	}
	return nil
}

// firstMigrated finds, depth first in document order, the first key under
// the server section that the table knows.
func firstMigrated(n *yaml.Node, prefix string) (*yaml.Node, string, string) {
	if n.Kind != yaml.MappingNode {
		return nil, "", ""
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		path := prefix + "." + k.Value
		for _, m := range migrations {
			if m.from == path {
				return k, m.from, m.to
			}
		}
		if k.Value == "web" {
			if hit, from, to := firstMigrated(n.Content[i+1], path); hit != nil {
				return hit, from, to
			}
		}
	}
	return nil, "", ""
}
