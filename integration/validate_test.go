package integration

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// The cases are shared with the in-process test (cmd/wraptool), so the two
// can never drift apart. The binary runs in the case's folder.
func TestConfigValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range configtest.ValidateCases() {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			dir, args, env := tc.Setup(t)
			var list []string
			for k, v := range env {
				list = append(list, k+"="+v)
			}
			stdout, stderr, code := runWraptoolIn(t, dir, list, args...)
			tc.Check(t, dir, stdout, stderr, code)
		})
	}
}

// What only a separate process can show: a config named relative to the
// working folder is found there and printed as given.
func TestConfigValidateRelativePaths(t *testing.T) {
	slow(t, "config validate with relative paths")
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args, env  []string
		wantStdout string
	}{
		{"a PATH relative to the working folder", []string{"config", "validate", "c.yaml"}, nil, "ok: c.yaml "},
		{"--config relative to the working folder", []string{"--config", "c.yaml", "config", "validate"}, nil, "ok: c.yaml "},
		{"WRAPTOOL_CONFIG relative to the working folder", []string{"config", "validate"}, []string{"WRAPTOOL_CONFIG=c.yaml"}, "ok: c.yaml "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.NewFixture(t, map[string]string{"c.yaml": configtest.ValidConfig})
			env := append([]string{"HOME=" + filepath.Join(dir, "home")}, tc.env...)
			stdout, stderr, code := runWraptoolIn(t, dir, env, tc.args...)
			if want := tc.wantStdout + configtest.ValidCounts; code != 0 || stdout != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want 0 and %q", code, stdout, stderr, want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runWraptool(t, nil, "version")
	if code != 0 {
		t.Errorf("exit status = %d, want 0 (stderr %q)", code, stderr)
	}
	if !strings.HasPrefix(stdout, "wraptool ") {
		t.Errorf("stdout = %q, want it to start with %q", stdout, "wraptool ")
	}
	if stderr != "" {
		t.Errorf("stderr = %q, want it empty", stderr)
	}
}

// touchyConfig names files validate must read or stat but never create: a
// missing MCP and admin token file, the default request log under HOME, an
// env file and a working folder. $DIR is the test's folder.
const touchyConfig = `mcp:
  listen: 127.0.0.1:8717
  auth_token_file: ./mcp-token
admin:
  listen: 127.0.0.1:8718
  auth_token_file: ~/admin-token
tools:
  git:
    binary: $DIR/bin/git
    working_dir: ./work
    env_files: [./git.env]
    allow:
      - subcommand: [pull]
        flags: ["--ff-only"]
`

func TestConfigValidateTouchesNothing(t *testing.T) {
	slow(t, "config validate touching nothing")
	t.Parallel()
	tests := []struct {
		name     string
		config   string
		args     []string
		wantCode int
	}{
		{
			name:   "a valid config with missing token files",
			config: touchyConfig,
			args:   []string{"config", "validate", "config.yaml"},
		},
		{
			name:     "an invalid config",
			config:   strings.Replace(touchyConfig, "$DIR/bin/git", "bin/git", 1),
			args:     []string{"config", "validate", "config.yaml"},
			wantCode: 1,
		},
		{
			name:     "a config with a server section",
			config:   "server:\n  auth_token_file: ./mcp-token\n  request_log: ./requests.jsonl\n",
			args:     []string{"config", "validate", "config.yaml"},
			wantCode: 1,
		},
		{
			name:     "a missing default config",
			args:     []string{"config", "validate"},
			wantCode: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{
				"git.env":    "# for git\nGIT_TERMINAL_PROMPT=0\n",
				"work/.keep": "",
			}
			if tt.config != "" {
				files["config.yaml"] = tt.config
			}
			dir := configtest.NewFixture(t, files)
			// Move every mtime into the past, so that a rewrite with the
			// same bytes, or a file created and removed again, shows.
			past := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
			backdate(t, dir, past)
			before := snapshot(t, dir)

			_, stderr, code := runWraptoolIn(t, dir, []string{"HOME=" + filepath.Join(dir, "home")}, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit status = %d, want %d (stderr %q)", code, tt.wantCode, stderr)
			}

			after := snapshot(t, dir)
			for _, name := range slices.Sorted(maps.Keys(before)) {
				switch a, ok := after[name]; {
				case !ok:
					t.Errorf("%s was removed", name)
				case a != before[name]:
					t.Errorf("%s changed: got %s, want %s", name, a, before[name])
				}
			}
			for _, name := range slices.Sorted(maps.Keys(after)) {
				if _, ok := before[name]; !ok {
					t.Errorf("%s was created", name)
				}
			}
			for _, name := range []string{"mcp-token", "home/admin-token", "home/.local", "requests.jsonl"} {
				if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
					t.Errorf("Lstat(%s) = %v, want it not to exist", name, err)
				}
			}
		})
	}
}

// backdate sets the access and modification times of dir and everything in
// it to when.
func backdate(t *testing.T, dir string, when time.Time) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(path, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshot describes every entry under dir, itself included, by its mode,
// size, modification time and, for files, a hash of its contents.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("mode %v size %d mtime %s", info.Mode(), info.Size(), info.ModTime().UTC().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" sha256 %x", sha256.Sum256(data))
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		entries[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// The default config path is resolved only when no PATH is given,
// so an explicit PATH should not need a home directory.
func TestConfigValidateWithPathNeedsNoHome(t *testing.T) {
	slow(t, "config validate without a home")
	t.Parallel()
	dir := configtest.NewFixture(t, map[string]string{
		"config.yaml": "mcp:\n  listen: 127.0.0.1:8717\n  request_log: $DIR/requests.jsonl\n",
	})
	path := filepath.Join(dir, "config.yaml")
	stdout, stderr, code := runWraptool(t, []string{"HOME="}, "config", "validate", path)
	if code != 0 {
		t.Errorf("exit status = %d, want 0 (stderr %q)", code, stderr)
	}
	if want := "ok: " + path + " (0 tools, 0 allow rules, 0 mcp_servers)\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}
}
