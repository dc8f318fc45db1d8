package edit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// applyRefusal is a request ApplyRequest must refuse, and how; a temporary
// grant of the same request is refused (dormant) with the same error.
type applyRefusal struct {
	name   string
	config string // default configtest.RefusalConfig
	// setup may change the folder or the file; it returns the path to
	// apply to (default dir/config.yaml).
	setup func(t *testing.T, dir, cfg string) string
	tool  string
	sub   []string
	flags []string
	is    error  // errors.Is target
	msg   string // exact message; $DIR and $CFG are replaced
}

// applyRefusals are the refusal cases ApplyRequest and the grant overlay
// share.
func applyRefusals() []applyRefusal {
	return []applyRefusal{
		{
			name: "a tool the config does not wrap is refused",
			tool: "gh", sub: []string{"pr", "list"}, flags: []string{"--json"},
			is:  config.ErrUnknownTool,
			msg: "tool 'gh' is not in the config; add it first (wraptool config add gh)",
		},
		{
			name: "an unknown tool whose name could hide characters is shown escaped",
			tool: "g\u0456t\x1b[2J", sub: []string{"push"},
			is:  config.ErrUnknownTool,
			msg: `tool "g\u0456t\x1b[2J" is not in the config, and is not a valid tool name`,
		},
		{
			name: "a subcommand a deny rule names is refused",
			tool: "git", sub: []string{"config"}, flags: []string{"--global"},
			is:  config.ErrDeniedSubcommand,
			msg: "deny rule tools.git.deny[0] (subcommand: [config]) at $CFG:14 covers git config; deny wins over allow, so remove or narrow that rule by hand first",
		},
		{
			name: "a subcommand a deny rule covers by prefix is refused",
			tool: "git", sub: []string{"remote", "add", "upstream"},
			is:  config.ErrDeniedSubcommand,
			msg: "deny rule tools.git.deny[1] (subcommand: [remote, add]) at $CFG:15 covers git remote add upstream; deny wins over allow, so remove or narrow that rule by hand first",
		},
		{
			name: "a flag the rule lists in deny_flags is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic", "--force"},
			is:  config.ErrDeniedFlag,
			msg: "flag --force is denied by tools.git.allow[1].deny_flags at $CFG:10; listing it would change nothing, so lift that deny by hand first",
		},
		{
			name: "a flag with a deny constraint is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--mirror"},
			is:  config.ErrDeniedFlag,
			msg: `flag --mirror is denied by tools.git.allow[1].flag_constraints["--mirror"] at $CFG:12; listing it would change nothing, so lift that deny by hand first`,
		},
		{
			name: "a flag that smuggles a value is refused",
			tool: "git", sub: []string{"push"}, flags: []string{"--receive-pack=evil"},
			is:  config.ErrInvalidRequest,
			msg: `"--receive-pack=evil" is not a flag: want -X (one letter or digit) or --name`,
		},
		{
			name: "a subcommand token outside the allowed set is refused",
			tool: "git", sub: []string{"../x"},
			is:  config.ErrInvalidRequest,
			msg: `subcommand token "../x" must match [A-Za-z0-9][A-Za-z0-9_-]*`,
		},
		{
			name: "no subcommand where the tool has no bare rule is refused",
			tool: "git", flags: []string{"--version"},
			is:  config.ErrInvalidRequest,
			msg: "a request with no subcommand can only add flags to the rule for git itself (subcommand: []), and the config has none",
		},
		{
			name: "a merge that gives one schema property to two flags is refused",
			tool: "git", sub: []string{"commit"}, flags: []string{"-m"},
			is:  config.ErrInvalid,
			msg: `the merged config would be invalid (lines as merged): $CFG:8: tools.git.allow[0].flags[1]: flags --m and -m give the same schema property "m"`,
		},
		{
			name: "a new rule whose MCP name clashes with another tool's is refused",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [remote_add]
`,
			tool: "git", sub: []string{"remote", "add"},
			is:  config.ErrInvalid,
			msg: `the merged config would be invalid (lines as merged): $CFG:8: tools.git.allow[1]: gives the MCP tool name "git_remote_add", already given by tools.git.allow[0]`,
		},
		{
			name: "a config with an alias is refused, as the loader refuses it",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - subcommand: [push]
        flags: &f [--atomic]
      - subcommand: [pull]
        flags: *f
`,
			tool: "git", sub: []string{"push"}, flags: []string{"--dry-run"},
			is:  config.ErrInvalid,
			msg: "cannot apply to a config that does not load; fix it first: $CFG:10: tools.git.allow[1].flags: aliases are not supported: write the value out",
		},
		{
			name: "a config with a merge key is refused, as the loader refuses it",
			config: `mcp:
  listen: 127.0.0.1:8717
tools:
  git:
    binary: $DIR/bin/git
    allow:
      - {subcommand: [push]}
      - <<: {flags: [--x]}
        subcommand: [pull]
`,
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  config.ErrInvalid,
			msg: "cannot apply to a config that does not load; fix it first: $CFG:8: tools.git.allow[1]: merge keys (<<) are not supported: write the values out",
		},
		{
			name: "a config others may write is refused",
			setup: func(t *testing.T, dir, cfg string) string {
				if err := os.Chmod(cfg, 0o620); err != nil {
					t.Fatal(err)
				}
				return cfg
			},
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  config.ErrInvalid,
			msg: "$CFG: $CFG is writable by group or others, and it decides what runs; fix with: chmod go-w $CFG",
		},
		{
			name: "a config changed by someone else between read and write is not overwritten",
			setup: func(t *testing.T, dir, cfg string) string {
				return cfg // the hook below edits it
			},
			tool: "git", sub: []string{"push"}, flags: []string{"--atomic"},
			is:  config.ErrChangedMeanwhile,
			msg: "$CFG changed while the request was being applied; nothing was written: apply it again",
		},
	}
}

// Every refusal leaves the config byte for byte as it was, and says why in
// a sentence that names what it refused.
func TestApplyRefusalsLeaveFileUntouched(t *testing.T) {
	t.Parallel()
	cases := applyRefusals()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := configtest.ApplyFixture(t)
			body := tc.config
			if body == "" {
				body = configtest.RefusalConfig
			}
			cfg := configtest.WriteConfig(t, dir, "config.yaml", body, 0o600)
			if tc.setup != nil {
				cfg = tc.setup(t, dir, cfg)
			}
			before := configtest.ReadFile(t, cfg)
			var hook func()
			var edited []byte
			if tc.is == config.ErrChangedMeanwhile {
				hook = func() {
					// An editor saves while the apply is between reading and
					// renaming.
					edited = append(bytes.Clone(before), "# edited by hand\n"...)
					if err := os.WriteFile(cfg, edited, 0o600); err != nil {
						t.Error(err)
					}
				}
			}
			_, err := apply(cfg, tc.tool, tc.sub, tc.flags, applyOptions(dir), hook)
			if err == nil {
				t.Fatal("apply succeeded, want a refusal")
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(err, %v) = false for %v", tc.is, err)
			}
			msg := strings.NewReplacer("$CFG", cfg, "$DIR", dir).Replace(tc.msg)
			if err.Error() != msg {
				t.Errorf("error:\n got %q\nwant %q", err, msg)
			}
			after := configtest.ReadFile(t, cfg)
			if edited != nil {
				before = edited // the editor's save stands, untouched by the apply
			}
			if !bytes.Equal(after, before) {
				t.Errorf("the config changed:\n%s", lineDiff(string(after), string(before)))
			}
			assertNoTemp(t, filepath.Dir(cfg))

			// PreviewApply refuses the same way (the race case aside: a
			// preview writes nothing, so nothing can be lost).
			if tc.is != config.ErrChangedMeanwhile {
				if _, _, perr := PreviewApply(cfg, tc.tool, tc.sub, tc.flags, applyOptions(dir)); perr == nil || perr.Error() != err.Error() {
					t.Errorf("PreviewApply error %v, want %v", perr, err)
				}
			}
		})
	}
}

// A config that is not a regular file is never replaced: a named pipe or a
// folder where the config belongs is refused (opening the pipe does not
// hang), and nothing is created beside it.
func TestApplyRefusesNonRegularConfig(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"named pipe", "directory"} {
		t.Run("a "+kind, func(t *testing.T) {
			t.Parallel()
			dir := configtest.ApplyFixture(t)
			cfg := filepath.Join(dir, "config.yaml")
			var err error
			if kind == "directory" {
				err = os.Mkdir(cfg, 0o700)
			} else {
				err = syscall.Mkfifo(cfg, 0o600)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = ApplyRequest(cfg, "git", []string{"push"}, []string{"--atomic"}, applyOptions(dir))
			if err == nil {
				t.Fatal("apply succeeded on a " + kind)
			}
			want := map[string]string{
				"named pipe": cfg + ": cannot read config: is not a regular file but a named pipe",
				"directory":  cfg + ": cannot read config: is a directory",
			}[kind]
			if err.Error() != want {
				t.Errorf("error:\n got %q\nwant %q", err, want)
			}
			if _, _, perr := PreviewApply(cfg, "git", []string{"push"}, []string{"--atomic"}, applyOptions(dir)); perr == nil || perr.Error() != want {
				t.Errorf("PreviewApply error %v, want %q", perr, want)
			}
			info, serr := os.Lstat(cfg)
			if serr != nil || info.Mode().IsRegular() {
				t.Errorf("the %s was replaced: %v %v", kind, info.Mode(), serr)
			}
			assertNoTemp(t, dir)
		})
	}
}

// A file whose line breaks YAML counts differently from the edit (a lone
// CR) is refused as a layout the edit cannot handle, and left alone.
func TestApplyRefusesUnsupportedLayout(t *testing.T) {
	t.Parallel()
	dir := configtest.ApplyFixture(t)
	in := "mcp:\n  listen: 127.0.0.1:8717\ntools:\n  git:\n    binary: $DIR/bin/git\n    allow: [{subcommand: [push],\r flags: [--a]}]\n"
	cfg := configtest.WriteConfig(t, dir, "config.yaml", in, 0o600)
	before := configtest.ReadFile(t, cfg)
	_, err := ApplyRequest(cfg, "git", []string{"push"}, []string{"--b"}, applyOptions(dir))
	if !errors.Is(err, config.ErrUnsupportedLayout) {
		t.Fatalf("error %v, want ErrUnsupportedLayout", err)
	}
	want := cfg + ": cannot merge the request into this file's layout in place (the file breaks lines with characters other than LF and CRLF); add it by hand"
	if err.Error() != want {
		t.Errorf("error:\n got %q\nwant %q", err, want)
	}
	if !bytes.Equal(configtest.ReadFile(t, cfg), before) {
		t.Error("the config changed")
	}
}
