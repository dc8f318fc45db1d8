package hook

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/requests"
)

func TestHookArgv(t *testing.T) {
	t.Parallel()
	r := requests.Record{ID: "req_0123abcd", Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"},
		Rationale: "first line\nsecond \x1b[31mred\u202e \"quoted\" $(id)"}
	tests := []struct {
		name       string
		record     requests.Record
		configured []string
		want       []string
	}{
		{
			name:       "each argument that is exactly a placeholder is replaced",
			record:     r,
			configured: []string{"notify", "{id}", "{tool}"},
			want:       []string{"notify", "req_0123abcd", "git"},
		},
		{
			// Validation refuses them; should one reach a hook anyway,
			// the assistant's words still never become an argument.
			name:       "the summary is never an argument",
			record:     r,
			configured: []string{"notify", "{summary}", "{summary_json}"},
			want:       []string{"notify", "{summary}", "{summary_json}"},
		},
		{
			name:       "a placeholder inside a longer argument, or spelled otherwise, stays as written",
			record:     r,
			configured: []string{"notify", "{id}x", "x{id}", "{ID}", "{{id}}", "{ id }", "--id={id}", "{tool}{id}", ""},
			want:       []string{"notify", "{id}x", "x{id}", "{ID}", "{{id}}", "{ id }", "--id={id}", "{tool}{id}", ""},
		},
		{
			name:       "shell syntax is an argument like any other, never run",
			record:     r,
			configured: []string{"notify", "$(touch pwned)", "`touch pwned`", "a;b", "{id}"},
			want:       []string{"notify", "$(touch pwned)", "`touch pwned`", "a;b", "req_0123abcd"},
		},
		{
			name:       "the command itself is never replaced",
			record:     r,
			configured: []string{"{tool}", "{id}"},
			want:       []string{"{tool}", "req_0123abcd"},
		},
		{
			// The assistant names the tool; a token can still name a
			// program a hook might start (env {tool}, sh -c {tool}).
			name:       "a tool the config does not have is an empty argument",
			record:     requests.Record{ID: "req_0123abcd", Tool: "perl", Subcommand: []string{"x"}},
			configured: []string{"/usr/bin/env", "{tool}", "{id}"},
			want:       []string{"/usr/bin/env", "", "req_0123abcd"},
		},
		{
			name:       "a placeholder may be repeated",
			record:     r,
			configured: []string{"notify", "{id}", "{id}"},
			want:       []string{"notify", "req_0123abcd", "req_0123abcd"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			configured := slices.Clone(tt.configured)
			got := Argv(configured, tt.record, func(tool string) bool { return tool == "git" })
			if !slices.Equal(got, tt.want) {
				t.Errorf("Argv(%q) =\n%q\nwant\n%q", tt.configured, got, tt.want)
			}
			if !slices.Equal(configured, tt.configured) {
				t.Errorf("Argv changed the configured hook to %q", configured)
			}
		})
	}
}

// The summary reaches the hook in its environment, escaped as the terminal
// display is: one line, no escape sequence, the rationale cut, every flag.
func TestHookEnvCarriesTheSummary(t *testing.T) {
	t.Parallel()
	exact := requests.Record{ID: "req_0123abcd", Tool: "git_push", Rationale: "why",
		Call: &requests.Call{Tool: "git_push", Command: []string{"git", "push", "--force", "origin", "two words"}}}
	long := requests.Record{ID: "req_0123abcd", Tool: "git", Subcommand: []string{"push"},
		Flags: []string{"--force", "--no-verify"}, Rationale: strings.Repeat("r", 300)}
	tests := []struct {
		name   string
		record requests.Record
		want   string
	}{
		{
			name: "escapes and line breaks are written as escapes; $(…) stays text",
			record: requests.Record{ID: "req_0123abcd", Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"},
				Rationale: "first line\nsecond \x1b[31mred\u202e \"quoted\" $(id) `id`"},
			want: `git push --force: first line second \x1b[31mred\u202e "quoted" $(id) ` + "`id`",
		},
		{
			name:   "an exact-call request is summarised as its command",
			record: exact,
			want:   `git push --force origin "two words": why`,
		},
		{
			name:   "the rationale is cut to 200 characters, never the flags",
			record: long,
			want:   "git push --force --no-verify: " + strings.Repeat("r", 200) + "…",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := Env("/usr/bin/notify-send", func(string) string { return "" }, tt.record)
			want := []string{"WRAPTOOL_REQUEST_ID=req_0123abcd", "WRAPTOOL_SUMMARY=" + tt.want}
			for _, w := range want {
				if !slices.Contains(env, w) {
					t.Errorf("environment %q\nlacks %q", env, w)
				}
			}
		})
	}
}

func TestHookStderrExcerpt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{name: "short output is kept, its line breaks collapsed", in: "no display\nsecond line\n", want: "no display second line"},
		{name: "control characters cannot forge a log line or repaint a terminal",
			in: "x\r\ntime=2026 level=ERROR msg=forged \x1b[2J", want: `x time=2026 level=ERROR msg=forged \x1b[2J`},
		{name: "long output is cut and marked", in: strings.Repeat("a", 2000), want: strings.Repeat("a", stderrExcerptLen) + "…"},
		{name: "a character the cut would split is dropped whole",
			in: "a" + strings.Repeat("é", 600), want: "a" + strings.Repeat("é", (stderrExcerptLen-1)/2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := StderrExcerpt(tt.in); got != tt.want {
				t.Errorf("StderrExcerpt(%q) =\n%q\nwant\n%q", tt.in, got, tt.want)
			}
		})
	}
}

func TestHookBinaryAndDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cmd, want string
	}{
		{name: "a bare name is left for the PATH lookup", cmd: "notify-send", want: "notify-send"},
		{name: "an absolute path stays", cmd: "/usr/bin/notify-send", want: "/usr/bin/notify-send"},
		{name: "a relative path names a file in the config's folder", cmd: "./hooks/notify", want: "/etc/wraptool/hooks/notify"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Binary(tt.cmd, "/etc/wraptool"); got != tt.want {
				t.Errorf("Binary(%q) = %q, want %q", tt.cmd, got, tt.want)
			}
		})
	}
	if got := Dir("", "/etc/wraptool/config.yaml"); got != "/etc/wraptool" {
		t.Errorf("hookDir without Dir = %q, want the config file's folder", got)
	}
}

// TestNew builds hooks from a config: none when it names none, a failure to
// log (never a start) when its command cannot be found, and otherwise the
// request's line on stdin, in the config's folder, with {tool} the config's
// own name only.
func TestNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	getenv := func(k string) string { return map[string]string{"PATH": "/usr/bin:/bin"}[k] }
	record := requests.Record{ID: "req_0123abcd", Tool: "sh", Subcommand: []string{"x"}}
	tests := []struct {
		name      string
		onRequest []string
		wantOK    bool
		wantErr   bool
		wantArgv  []string
	}{
		{name: "a config without a hook has none", wantOK: false},
		{name: "a command not in the PATH is a failure, not a start", onRequest: []string{"wraptool-no-such-hook", "{id}"},
			wantOK: true, wantErr: true},
		{name: "a tool the config lacks is an empty argument", onRequest: []string{"/bin/echo", "{tool}", "{id}"},
			wantOK: true, wantArgv: []string{"/bin/echo", "", "req_0123abcd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := &config.Config{File: filepath.Join(dir, "wraptool.yaml"), MCP: config.MCP{OnRequest: tt.onRequest}}
			run, ok := New(c, record, []byte("{}\n"), getenv)
			if ok != tt.wantOK {
				t.Fatalf("New ok = %v, want %v", ok, tt.wantOK)
			}
			if !ok {
				return
			}
			if (run.Err != nil) != tt.wantErr {
				t.Fatalf("New error = %v, want an error: %v", run.Err, tt.wantErr)
			}
			if !slices.Equal(run.Configured, tt.onRequest) {
				t.Errorf("Configured = %q, want %q", run.Configured, tt.onRequest)
			}
			if tt.wantErr {
				return
			}
			if !slices.Equal(run.Argv, tt.wantArgv) {
				t.Errorf("Argv = %q, want %q", run.Argv, tt.wantArgv)
			}
			if run.Dir != dir || string(run.Stdin) != "{}\n" || run.OutputCap != OutputCap {
				t.Errorf("Dir, Stdin, OutputCap = %q, %q, %d; want %q, the line, %d", run.Dir, run.Stdin, run.OutputCap, dir, OutputCap)
			}
		})
	}
}
