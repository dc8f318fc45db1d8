package config

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// loadFixture writes a config naming a token file and an env file, and
// returns its path and the folder.
func loadFixture(t *testing.T) (path, dir string) {
	t.Helper()
	dir = fixture(t)
	path = filepath.Join(dir, "config.yaml")
	configtest.WriteFile(t, path, strings.ReplaceAll(base+"  auth_token_file: $T/tok/a\ntools:\n  git:\n    binary: $T/bin/tool\n    env_files: [\"$T/env/good.env\"]\n    allow:\n      - subcommand: [pull]\n", "$T", dir), 0o600)
	return path, dir
}

func load(t *testing.T, path string, o *LoadOptions) *Loaded {
	t.Helper()
	if o == nil {
		o = &LoadOptions{}
	}
	if o.Paths == nil {
		o.Paths = &Options{Home: filepath.Dir(path), Getenv: func(string) string { return "" }}
	}
	l, err := LoadFile(t.Context(), path, o)
	if err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	return l
}

func TestLoadFileBuildsEverything(t *testing.T) {
	t.Parallel()
	path, _ := loadFixture(t)
	l := load(t, path, nil)
	if l.MCPToken != "alpha-token" {
		t.Errorf("MCPToken = %q, want the token file's", l.MCPToken)
	}
	if _, ok := l.Policy.Rule("git_pull"); !ok {
		t.Errorf("policy does not expose git_pull")
	}
	if got := l.Config.Tools["git"].FileEnv["A"]; got != "1" {
		t.Errorf("env from the env file: A=%q, want 1", got)
	}
	if l.Hash == "" || len(l.Created) != 0 {
		t.Errorf("Hash %q, Created %q", l.Hash, l.Created)
	}
}

// The hash covers every file the load read, so a watch-triggered reload of
// unchanged files is skipped, and any change to one of them is not.
func TestLoadFileHashCoversEveryFileRead(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, dir, path string)
		changes bool
	}{
		{"rewriting the same config bytes", func(t *testing.T, dir, path string) {
			data, _ := os.ReadFile(path)
			configtest.WriteFile(t, path, string(data), 0o600)
		}, false},
		{"a comment added to the config", func(t *testing.T, dir, path string) {
			data, _ := os.ReadFile(path)
			configtest.WriteFile(t, path, string(data)+"# note\n", 0o600)
		}, true},
		{"a rotated token", func(t *testing.T, dir, path string) {
			configtest.WriteFile(t, filepath.Join(dir, "tok/a"), "rotated\n", 0o600)
		}, true},
		{"an env file's new value", func(t *testing.T, dir, path string) {
			configtest.WriteFile(t, filepath.Join(dir, "env/good.env"), "A=2\n", 0o600)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, dir := loadFixture(t)
			before := load(t, path, nil).Hash
			tc.change(t, dir, path)
			after := load(t, path, nil).Hash
			if changed := before != after; changed != tc.changes {
				t.Errorf("hash changed %v, want %v", changed, tc.changes)
			}
		})
	}
}

func TestLoadFileTokenModes(t *testing.T) {
	t.Parallel()
	missing := func(t *testing.T) (string, string) {
		path, dir := loadFixture(t)
		tok := filepath.Join(dir, "new", "mcp-token")
		configtest.WriteFile(t, path, strings.Replace(string(configtest.ReadFile(t, path)), filepath.Join(dir, "tok/a"), tok, 1), 0o600)
		return path, tok
	}
	t.Run("a reload refuses a missing token file at its field", func(t *testing.T) {
		t.Parallel()
		path, tok := missing(t)
		_, err := LoadFile(t.Context(), path, &LoadOptions{Paths: &Options{Home: filepath.Dir(path)}})
		e := asConfigError(t, err)
		if e.Path != "mcp.auth_token_file" || !strings.Contains(e.Msg, tok+": no such file or directory") {
			t.Errorf("got %v", err)
		}
	})
	t.Run("start-up creates it, private, and reports it", func(t *testing.T) {
		t.Parallel()
		path, tok := missing(t)
		l := load(t, path, &LoadOptions{Tokens: TokensCreate})
		if !slices.Equal(l.Created, []string{tok}) || len(l.MCPToken) != 64 {
			t.Fatalf("Created %q, token %q", l.Created, l.MCPToken)
		}
		if got := strings.TrimSpace(string(configtest.ReadFile(t, tok))); got != l.MCPToken {
			t.Errorf("token in the file %q, loaded %q", got, l.MCPToken)
		}
		for p, want := range map[string]os.FileMode{tok: 0o600, filepath.Dir(tok): 0o700 | os.ModeDir} {
			if info, err := os.Stat(p); err != nil || info.Mode() != want {
				t.Errorf("%s: mode %v (%v), want %v", p, info.Mode(), err, want)
			}
		}
		if again := load(t, path, &LoadOptions{Tokens: TokensCreate}); len(again.Created) != 0 || again.MCPToken != l.MCPToken {
			t.Errorf("a second start-up overwrote or re-created the token: %+v", again.Created)
		}
	})
	t.Run("the elicitation clients' tokens are created and named", func(t *testing.T) {
		t.Parallel()
		path, dir := loadFixture(t)
		fresh := filepath.Join(dir, "new", "desk-token")
		configtest.WriteFile(t, path, strings.Replace(string(configtest.ReadFile(t, path)), "mcp:\n", "mcp:\n  elicit_clients:\n    - {name: Desk, token_file: "+fresh+"}\n    - {name: Phone, token_file: "+filepath.Join(dir, "tok/b")+"}\n", 1), 0o600)
		if l := load(t, path, &LoadOptions{Tokens: TokensOptional}); len(l.ElicitTokens) != 1 || l.ElicitTokens["beta-token"] != "Phone" {
			t.Errorf("validate: ElicitTokens %v, want only Phone's (the missing file left out)", l.ElicitTokens)
		}
		l := load(t, path, &LoadOptions{Tokens: TokensCreate})
		desk := strings.TrimSpace(string(configtest.ReadFile(t, fresh)))
		if !slices.Contains(l.Created, fresh) || len(desk) != 64 || l.ElicitTokens[desk] != "Desk" || l.ElicitTokens["beta-token"] != "Phone" || len(l.ElicitTokens) != 2 {
			t.Errorf("start-up: Created %q, ElicitTokens %v", l.Created, l.ElicitTokens)
		}
		if l.ElicitTokens[l.MCPToken] != "" {
			t.Errorf("the MCP token is an elicitation token")
		}
	})
	t.Run("a running server's reload refuses a missing MCP token, never replacing it", func(t *testing.T) {
		t.Parallel()
		path, tok := missing(t)
		_, err := LoadFile(t.Context(), path, &LoadOptions{Tokens: TokensReload, Paths: &Options{Home: filepath.Dir(path)}})
		if e := asConfigError(t, err); e.Path != "mcp.auth_token_file" {
			t.Errorf("got %v", err)
		}
		if _, err := os.Stat(tok); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the reload created the MCP token %s (%v)", tok, err)
		}
	})
	t.Run("a running server's reload creates a new admin token file, as start-up does", func(t *testing.T) {
		t.Parallel()
		path, dir := loadFixture(t)
		admin := filepath.Join(dir, "new", "admin-token")
		configtest.WriteFile(t, path, string(configtest.ReadFile(t, path))+"admin:\n  listen: 127.0.0.1:0\n  auth_token_file: "+admin+"\n", 0o600)
		l := load(t, path, &LoadOptions{Tokens: TokensReload})
		if got := strings.TrimSpace(string(configtest.ReadFile(t, admin))); !slices.Equal(l.Created, []string{admin}) || got != l.AdminToken || len(got) != 64 {
			t.Errorf("Created %q, admin token %q, in the file %q", l.Created, l.AdminToken, got)
		}
	})
	t.Run("validate accepts it missing and creates nothing", func(t *testing.T) {
		t.Parallel()
		path, tok := missing(t)
		l := load(t, path, &LoadOptions{Tokens: TokensOptional})
		if l.MCPToken != "" {
			t.Errorf("MCPToken = %q", l.MCPToken)
		}
		if _, err := os.Stat(filepath.Dir(tok)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("validate created %s (%v)", filepath.Dir(tok), err)
		}
	})
}

// A FIFO or a device where a file belongs must not stall a load (a reload
// that never ends would keep the server from stopping), and a huge file must
// not fill memory.
func TestLoadFileReadsOnlyRegularFilesOfBoundedSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir, path string) string // returns the path to load
		msg   string
	}{
		{"an env file that is a named pipe", func(t *testing.T, dir, path string) string {
			fifo(t, filepath.Join(dir, "env/good.env"))
			return path
		}, "env/good.env: is not a regular file but a named pipe"},
		{"a token file that is a named pipe", func(t *testing.T, dir, path string) string {
			fifo(t, filepath.Join(dir, "tok/a"))
			return path
		}, "tok/a: is not a regular file but a named pipe"},
		{"a config that is a named pipe", func(t *testing.T, dir, path string) string {
			fifo(t, path)
			return path
		}, "config.yaml: cannot read config: is not a regular file but a named pipe"},
		{"a token file that is a device", func(t *testing.T, dir, path string) string {
			configtest.WriteFile(t, path, strings.Replace(string(configtest.ReadFile(t, path)), filepath.Join(dir, "tok/a"), "/dev/zero", 1), 0o600)
			return path
		}, "/dev/zero: is not a regular file but a device"},
		{"an env file over 1 MiB", func(t *testing.T, dir, path string) string {
			configtest.WriteFile(t, filepath.Join(dir, "env/good.env"), "A="+strings.Repeat("x", 1<<20)+"\n", 0o600)
			return path
		}, "env/good.env: is 1048579 bytes; at most 1048576 are read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, dir := loadFixture(t)
			path = tc.setup(t, dir, path)
			done := make(chan error, 1)
			go func() {
				_, err := LoadFile(context.Background(), path, &LoadOptions{Paths: &Options{Home: dir}})
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.msg) {
					t.Errorf("LoadFile: %v, want it to contain %q", err, tc.msg)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("LoadFile blocked")
			}
		})
	}
}

func TestLoadFileEndsWithItsContext(t *testing.T) {
	t.Parallel()
	path, _ := loadFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := LoadFile(ctx, path, &LoadOptions{Paths: &Options{Home: filepath.Dir(path)}}); !errors.Is(err, context.Canceled) {
		t.Errorf("LoadFile with a cancelled context: %v", err)
	}
}

func TestWatchAndOwnFiles(t *testing.T) {
	t.Parallel()
	path, dir := loadFixture(t)
	c := load(t, path, nil).Config
	if got, want := c.WatchFiles(), []string{path, dir + "/tok/a", dir + "/env/good.env"}; !slices.Equal(got, want) {
		t.Errorf("WatchFiles = %q, want %q", got, want)
	}
	if got := c.OwnFiles(); !slices.Contains(got, c.MCP.RequestLog) || !slices.Contains(got, filepath.Join(filepath.Dir(c.MCP.RequestLog), "grants.key")) ||
		!slices.Contains(got, filepath.Join(filepath.Dir(c.MCP.RequestLog), "sessions.json")) ||
		slices.Contains(got, path) || !slices.Contains(got, dir+"/env/good.env") {
		t.Errorf("OwnFiles = %q", got)
	}
}

func fifo(t *testing.T, path string) {
	t.Helper()
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
