package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// protectedOptions points the default folders into dir/home and PATH at
// dir/path.
func protectedOptions(dir, goos string) *Options {
	return &Options{Home: filepath.Join(dir, "home"), GOOS: goos, Getenv: func(k string) string {
		if k == "PATH" {
			return filepath.Join(dir, "path") + ":relative"
		}
		return ""
	}}
}

// The protected set names every kind of wraptool file, the folders that
// are wraptool's, and the programs a started process must not replace.
func TestProtected(t *testing.T) {
	t.Parallel()
	const head = "mcp:\n  listen: 127.0.0.1:8717\n"
	cases := []struct {
		name   string
		files  []string          // made under $T before the config is read
		links  map[string]string // link → target
		config string            // where the config is written, under $T
		yaml   string
		goos   string
		self   string // under $T; "" for none
		// hidden and readOnly must be listed, notHidden and notReadOnly
		// must not; all are under $T ($H is $T/home).
		hidden, notHidden     []string
		readOnly, notReadOnly []string
		noReadOnly            bool
	}{
		{
			name:        "a hook's script is read-only and its data arguments are not",
			files:       []string{"bin/python3*", "etc/notify.py", "etc/notes.txt"},
			config:      "etc/config.yaml",
			yaml:        head + `  on_request: [$T/bin/python3, notify.py, notes.txt, "{id}"]` + "\n",
			readOnly:    []string{"bin/python3", "etc/notify.py"},
			notReadOnly: []string{"etc/notes.txt"},
		},
		{
			name:   "every kind of file is hidden whether written or not",
			files:  []string{"etc/notes.txt", "etc/tool.env", "etc/srv.env", "etc/over.yaml", "logs/keep.txt", "bin/tool*"},
			config: "etc/config.yaml",
			yaml: head + `  auth_token_file: $T/tok/mcp
  request_log: $T/logs/requests.jsonl
  elicit_clients:
    - {name: Desk, token_file: $T/tok/desk}
admin:
  listen: 127.0.0.1:8718
  auth_token_file: $T/tok/admin
tools:
  git:
    binary: $T/bin/tool
    env_files: [$T/etc/tool.env]
    introspection: {overrides_file: $T/etc/over.yaml}
mcp_servers:
  fs:
    command: /nonexistent/srv
    env_files: [$T/etc/srv.env]
`,
			hidden: []string{"etc/config.yaml", "tok/mcp", "tok/desk", "tok/admin", "etc/tool.env", "etc/srv.env", "etc/over.yaml",
				"logs/requests.jsonl", "logs/grants.key", "logs/sessions.json", "logs/audit.jsonl", "logs/audit.jsonl.1", "logs/audit.jsonl.5",
				"$H/.cache/wraptool/introspection", "$H/.cache/wraptool"},
			notHidden: []string{"etc", "logs", "logs/audit.jsonl.6", "etc/notes.txt", "logs/keep.txt", "$H/.config/wraptool", "$H/.local/share/wraptool"},
		},
		{
			name:   "a default folder holding one protected file is listed whole",
			files:  []string{"$H/.config/wraptool/notes.txt"},
			config: "$H/.config/wraptool/config.yaml",
			yaml:   head,
			hidden: []string{"$H/.config/wraptool", "$H/.config/wraptool/config.yaml", "$H/.local/share/wraptool", "$H/.local/share/wraptool/requests.jsonl"},
			// The folder is hidden whole; the notes in it are not listed one by one.
			notHidden: []string{"$H/.config/wraptool/notes.txt", "$H/.config", "$H"},
		},
		{
			name:      "a default folder holding nothing protected is not listed",
			files:     []string{"logs/"},
			config:    "only/config.yaml",
			yaml:      head + "  request_log: $T/logs/requests.jsonl\n",
			hidden:    []string{"$H/.cache/wraptool"},
			notHidden: []string{"$H/.config/wraptool", "$H/.local/share/wraptool"},
		},
		{
			name:      "on macOS the config and data folder is one, listed once",
			config:    "$H/Library/Application Support/wraptool/config.yaml",
			yaml:      head,
			goos:      "darwin",
			hidden:    []string{"$H/Library/Application Support/wraptool", "$H/Library/Application Support/wraptool/requests.jsonl", "$H/Library/Caches/wraptool/introspection"},
			notHidden: []string{"$H/.config/wraptool", "$H/.local/share/wraptool"},
		},
		{
			name:      "another folder holding only protected files is listed whole",
			files:     []string{"only/token", "logs/audit.jsonl.3"},
			config:    "only/config.yaml",
			yaml:      head + "  auth_token_file: $T/only/token\n  request_log: $T/logs/requests.jsonl\n",
			hidden:    []string{"only", "only/config.yaml", "only/token", "logs", "logs/requests.jsonl"},
			notHidden: []string{"."},
		},
		{
			name:      "another folder holding anything else lists only the files",
			files:     []string{"mixed/token", "mixed/README"},
			config:    "mixed/config.yaml",
			yaml:      head + "  auth_token_file: $T/mixed/token\n",
			hidden:    []string{"mixed/config.yaml", "mixed/token"},
			notHidden: []string{"mixed", "mixed/README"},
		},
		{
			name:      "an empty folder is not listed",
			files:     []string{"empty/"},
			config:    "etc/config.yaml",
			yaml:      head + "  request_log: $T/empty/requests.jsonl\n",
			hidden:    []string{"empty/requests.jsonl"},
			notHidden: []string{"empty"},
		},
		{
			name:      "a unix listener's socket is hidden",
			files:     []string{"run/other"},
			config:    "etc/config.yaml",
			yaml:      "mcp:\n  transport: unix\n  listen: $T/run/wraptool.sock\n",
			hidden:    []string{"run/wraptool.sock"},
			notHidden: []string{"run"},
		},
		{
			name:      "an sse listener has no socket",
			config:    "etc/config.yaml",
			yaml:      head,
			notHidden: []string{"etc/127.0.0.1:8717"},
		},
		{
			name:      "audit off lists no audit files",
			config:    "etc/config.yaml",
			yaml:      head + "  request_log: $T/logs/requests.jsonl\n  audit_log: \"off\"\n",
			hidden:    []string{"logs/requests.jsonl"},
			notHidden: []string{"logs/audit.jsonl", "logs/audit.jsonl.1", "etc/off"},
		},
		{
			name:      "an audit log elsewhere is hidden with its rotated files",
			config:    "etc/config.yaml",
			yaml:      head + "  audit_log: $T/audit/calls.jsonl\n",
			hidden:    []string{"audit/calls.jsonl", "audit/calls.jsonl.1", "audit/calls.jsonl.2", "audit/calls.jsonl.3", "audit/calls.jsonl.4", "audit/calls.jsonl.5"},
			notHidden: []string{"audit/calls.jsonl.6", "audit/calls.jsonl.0", "$H/.local/share/wraptool/audit.jsonl"},
		},
		{
			name:      "a symlinked config is hidden as the link and as its target",
			files:     []string{"dotfiles/wraptool.yaml", "dotfiles/vimrc"},
			links:     map[string]string{"etc/config.yaml": "$T/dotfiles/wraptool.yaml"},
			config:    "etc/config.yaml",
			yaml:      head,
			hidden:    []string{"etc/config.yaml", "dotfiles/wraptool.yaml"},
			notHidden: []string{"dotfiles"},
		},
		{
			name:      "a file not written yet in a symlinked folder is hidden in both folders",
			files:     []string{"data/keep"},
			links:     map[string]string{"datalink": "$T/data"},
			config:    "etc/config.yaml",
			yaml:      head + "  request_log: $T/datalink/requests.jsonl\n",
			hidden:    []string{"datalink/requests.jsonl", "data/requests.jsonl", "data/grants.key"},
			notHidden: []string{"data", "datalink"},
		},
		{
			name: "programs a started process must not replace are read-only",
			files: []string{"self/wraptool*", "bin/tool*", "opt/real-tool*", "path/srv*", "path/notify*", "path2/srv*",
				"srv/server.js", "srv/run.sh*", "srv/lib/", "scripts/abs.py", "srv/data.db", "srv/marks"},
			links:  map[string]string{"self/wt": "$T/self/wraptool", "bin/linked": "$T/opt/real-tool", "path/npx": "$T/opt/real-tool"},
			config: "etc/config.yaml",
			self:   "self/wt",
			yaml: head + `  on_request: [notify, "{id}"]
tools:
  git:
    binary: $T/bin/tool
  linked:
    binary: $T/bin/linked
mcp_servers:
  node:
    command: srv
    args: [-y, server.js, lib, "@scope/pkg", $T/scripts/abs.py, missing.js, data.db, marks]
    working_dir: $T/srv
  npx:
    command: npx
  own:
    command: srv
    env: {PATH: "$T/path2"}
  rel:
    command: ./run.sh
    working_dir: $T/srv
  gone:
    command: not-in-path
`,
			readOnly: []string{"self/wt", "self/wraptool", "bin/tool", "bin/linked", "opt/real-tool", "path/srv", "path/npx",
				"path2/srv", "srv/server.js", "scripts/abs.py", "path/notify", "srv/run.sh"},
			notReadOnly: []string{"srv/data.db", "srv/marks", "srv/lib", "srv/missing.js", "srv/-y", "srv/@scope/pkg", "not-in-path", "path/not-in-path", "relative/srv"},
		},
		{
			name:     "a hook named by its path is read-only",
			files:    []string{"hooks/hook*"},
			config:   "etc/config.yaml",
			yaml:     head + "  on_request: [../hooks/hook, \"{id}\"]\n",
			readOnly: []string{"hooks/hook"},
		},
		{
			name:       "no self, no programs",
			config:     "etc/config.yaml",
			yaml:       head,
			noReadOnly: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(dir, "home")
			under := func(p string) string {
				p = strings.ReplaceAll(strings.ReplaceAll(p, "$H", home), "$T", dir)
				if filepath.IsAbs(p) {
					return filepath.Clean(p)
				}
				return filepath.Join(dir, p)
			}
			for _, f := range tc.files {
				mode := os.FileMode(0o600)
				if name, ok := strings.CutSuffix(f, "*"); ok {
					f, mode = name, 0o700
				}
				p := under(f)
				if strings.HasSuffix(f, "/") { // a folder
					if err := os.MkdirAll(p, 0o700); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("A=1\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			for link, target := range tc.links {
				if err := os.MkdirAll(filepath.Dir(under(link)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(under(target), under(link)); err != nil {
					t.Fatal(err)
				}
			}
			file := under(tc.config)
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			data := []byte(strings.ReplaceAll(tc.yaml, "$T", dir))
			if _, err := os.Lstat(file); err != nil {
				if err := os.WriteFile(file, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			o := protectedOptions(dir, tc.goos)
			var c *Config
			c, err = Parse(file, data, o)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			self := ""
			if tc.self != "" {
				self = under(tc.self)
			}
			got := c.Protected(self, o)
			for what, list := range map[string][]string{"Hidden": got.Hidden, "ReadOnly": got.ReadOnly} {
				if !slices.IsSorted(list) || len(slices.Compact(slices.Clone(list))) != len(list) {
					t.Errorf("%s is not sorted without repeats: %q", what, list)
				}
				for _, p := range list {
					if !filepath.IsAbs(p) || filepath.Clean(p) != p {
						t.Errorf("%s holds %q, which is not absolute and clean", what, p)
					}
					if strings.Contains(p, "127.0.0.1") {
						t.Errorf("%s holds %q: an sse listener's address is no file", what, p)
					}
				}
			}
			check := func(what string, list, want []string, listed bool) {
				t.Helper()
				for _, w := range want {
					if slices.Contains(list, under(w)) != listed {
						t.Errorf("%s: %s listed = %v, want %v; %s:\n  %s", what, under(w), !listed, listed, what,
							strings.Join(list, "\n  "))
					}
				}
			}
			check("Hidden", got.Hidden, tc.hidden, true)
			check("Hidden", got.Hidden, tc.notHidden, false)
			check("ReadOnly", got.ReadOnly, tc.readOnly, true)
			check("ReadOnly", got.ReadOnly, tc.notReadOnly, false)
			if tc.noReadOnly && len(got.ReadOnly) > 0 {
				t.Errorf("ReadOnly = %q, want none", got.ReadOnly)
			}
		})
	}
}

// A Config built by hand names no files: nothing it leaves empty becomes
// the working directory, which would hide the server's own folder.
func TestProtectedOfAnEmptyConfigHoldsNoWorkingDirectory(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := protectedOptions(dir, "")
	got := (&Config{}).Protected("", o)
	want := Protected{Hidden: []string{filepath.Join(dir, "home/.cache/wraptool"), filepath.Join(dir, "home/.cache/wraptool/introspection")}}
	if !slices.Equal(got.Hidden, want.Hidden) || len(got.ReadOnly) != 0 {
		t.Errorf("Protected of an empty config:\n got %q\nwant %q", got, want)
	}
	if own := (&Config{}).OwnFiles(); len(own) != 0 {
		t.Errorf("OwnFiles of an empty config = %q, want none", own)
	}
}

// A protected file inside an allowed cwd root or a working_dir costs the
// tools running there the right to create entries in the folders above it:
// validate and serve say so, naming the file, the field and the default
// folders.
func TestProtectedFilesInsideWorkingFoldersAreWarnedAbout(t *testing.T) {
	t.Parallel()
	const head = "mcp:\n  listen: 127.0.0.1:8717\n"
	const defaults = "keep wraptool's files out of it, in ~/.config/wraptool, ~/.local/share/wraptool and ~/.cache/wraptool"
	const protects = ", which wraptool protects: tools running there cannot create, remove or rename entries in the folders above it "
	cases := []struct {
		name   string
		files  []string          // made under $T; a name ending in "*" is executable
		links  map[string]string // link → target
		config string            // where the config is, under $T
		yaml   string
		want   []string
	}{
		{
			name:   "a config in a repository that is an allowed root",
			files:  []string{"repo/README"},
			config: "repo/wraptool.yaml",
			yaml:   head + "  allowed_cwd_roots: [$T/repo]\n",
			want: []string{"$T/repo/wraptool.yaml:3: mcp.allowed_cwd_roots[0]: $T/repo holds $T/repo/wraptool.yaml" + protects +
				"($T/repo); " + defaults},
		},
		{
			name:   "an env file deep inside a tool's working_dir",
			files:  []string{"work/README", "work/sub/tool.env", "work/sub/notes", "bin/tool*"},
			config: "etc/config.yaml",
			yaml:   head + "tools:\n  git:\n    binary: $T/bin/tool\n    working_dir: $T/work\n    env_files: [$T/work/sub/tool.env]\n",
			want: []string{"$T/etc/config.yaml:6: tools.git.working_dir: $T/work holds $T/work/sub/tool.env" + protects +
				"($T/work/sub, $T/work); " + defaults},
		},
		{
			name:   "a tool's binary inside an mcp server's working_dir",
			files:  []string{"work/bin/tool*", "work/README"},
			config: "etc/config.yaml",
			yaml:   head + "tools:\n  git:\n    binary: $T/work/bin/tool\nmcp_servers:\n  fs:\n    command: /nonexistent/srv\n    working_dir: $T/work\n",
			want: []string{"$T/etc/config.yaml:9: mcp_servers.fs.working_dir: $T/work holds $T/work/bin/tool" + protects +
				"($T/work/bin, $T/work); " + defaults},
		},
		{
			name:   "a folder wraptool lists whole is named once, not each file in it",
			files:  []string{"repo/README", "repo/.wraptool/token"},
			config: "repo/.wraptool/config.yaml",
			yaml:   head + "  auth_token_file: token\n  allowed_cwd_roots: [..]\n",
			want: []string{"$T/repo/.wraptool/config.yaml:4: mcp.allowed_cwd_roots[0]: $T/repo holds $T/repo/.wraptool" + protects +
				"($T/repo); " + defaults},
		},
		{
			name:   "a root reached through a symlink is compared resolved",
			files:  []string{"repo/README"},
			links:  map[string]string{"link": "$T/repo"},
			config: "repo/wraptool.yaml",
			yaml:   head + "  allowed_cwd_roots: [$T/link]\n",
			want: []string{"$T/repo/wraptool.yaml:3: mcp.allowed_cwd_roots[0]: $T/link holds $T/repo/wraptool.yaml" + protects +
				"($T/repo); " + defaults},
		},
		{
			name:   "a config reached through a symlinked folder inside the root is compared as written",
			files:  []string{"repo/README", "elsewhere/keep"},
			links:  map[string]string{"repo/cfg": "$T/elsewhere"},
			config: "repo/cfg/wraptool.yaml",
			yaml:   head + "  allowed_cwd_roots: [$T/repo]\n",
			want: []string{"$T/repo/cfg/wraptool.yaml:3: mcp.allowed_cwd_roots[0]: $T/repo holds $T/repo/cfg/wraptool.yaml" + protects +
				"($T/repo/cfg, $T/repo); " + defaults},
		},
		{
			name:   "a root that is itself a protected folder",
			config: "$H/.config/wraptool/config.yaml",
			yaml:   head + "  allowed_cwd_roots: [$H/.config/wraptool]\n",
			want: []string{"$H/.config/wraptool/config.yaml:3: mcp.allowed_cwd_roots[0]: $H/.config/wraptool is itself protected by wraptool: " +
				"tools running there can neither read nor change anything in it; name a folder that holds none of wraptool's files"},
		},
		{
			name:   "a root holding a default folder is told it holds wraptool's folder",
			files:  []string{"etc/README", "$H/.profile"},
			config: "etc/config.yaml",
			yaml:   head + "  request_log: $T/etc/requests.jsonl\n  allowed_cwd_roots: [$H]\n",
			want: []string{"$T/etc/config.yaml:4: mcp.allowed_cwd_roots[0]: $H holds $H/.cache/wraptool" + protects +
				"($H/.cache, $H); wraptool keeps its files there by default, so name a folder that does not hold it"},
		},
		{
			name:   "protected files outside every root and working_dir give no warning",
			files:  []string{"src/README", "work/README", "bin/tool*"},
			config: "etc/config.yaml",
			yaml:   head + "  allowed_cwd_roots: [$T/src]\ntools:\n  git:\n    binary: $T/bin/tool\n    working_dir: $T/work\n",
		},
		{
			name:   "a root beside the config's folder, sharing a prefix, gives no warning",
			files:  []string{"repo-other/README", "repo/README"},
			config: "repo/wraptool.yaml",
			yaml:   head + "  allowed_cwd_roots: [$T/repo-other]\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			home := filepath.Join(dir, "home")
			expand := strings.NewReplacer("$H", home, "$T", dir).Replace
			under := func(p string) string {
				p = expand(p)
				if filepath.IsAbs(p) {
					return p
				}
				return filepath.Join(dir, p)
			}
			for _, f := range tc.files {
				mode := os.FileMode(0o600)
				if name, ok := strings.CutSuffix(f, "*"); ok {
					f, mode = name, 0o700
				}
				if err := os.MkdirAll(filepath.Dir(under(f)), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(under(f), []byte("A=1\n"), mode); err != nil {
					t.Fatal(err)
				}
			}
			for link, target := range tc.links {
				if err := os.Symlink(under(target), under(link)); err != nil {
					t.Fatal(err)
				}
			}
			file := under(tc.config)
			if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
				t.Fatal(err)
			}
			data := []byte(expand(tc.yaml))
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			o := protectedOptions(dir, "")
			c, err := Parse(file, data, o)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			var got []string
			for _, w := range c.Warnings(nil, o) {
				got = append(got, w.String())
			}
			var want []string
			for _, w := range tc.want {
				want = append(want, expand(w))
			}
			if !slices.Equal(got, want) {
				t.Errorf("warnings:\n got %q\nwant %q", got, want)
			}
		})
	}
}
