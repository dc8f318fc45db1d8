package actors

import (
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/policy/config"
)

// fakeUpstream is the fixture upstream server (testdata/fakeupstream),
// built at most once per test binary, by the first test that needs it.
var fakeUpstream struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fakeUpstream.dir != "" {
		os.RemoveAll(fakeUpstream.dir)
	}
	os.Exit(code)
}

// fakeUpstreamPath builds the fixture upstream server, once, and returns
// the binary's absolute path.
func fakeUpstreamPath(t *testing.T) string {
	t.Helper()
	fakeUpstream.once.Do(func() {
		dir, err := os.MkdirTemp("", "wraptool-fakeupstream-")
		if err != nil {
			fakeUpstream.err = err
			return
		}
		fakeUpstream.dir = dir
		path := filepath.Join(dir, "fakeupstream")
		out, err := exec.Command("go", "build", "-o", path, "./testdata/fakeupstream").CombinedOutput()
		if err != nil {
			fakeUpstream.err = fmt.Errorf("go build ./testdata/fakeupstream: %v\n%s", err, out)
			return
		}
		fakeUpstream.path = path
	})
	if fakeUpstream.err != nil {
		t.Fatal(fakeUpstream.err)
	}
	return fakeUpstream.path
}

func TestUpstreamTimingDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   UpstreamTiming
		want UpstreamTiming
	}{
		{
			name: "zero fields are the README's figures",
			in:   UpstreamTiming{},
			want: UpstreamTiming{PingEvery: 30 * time.Second, PingTimeout: 10 * time.Second, FirstBackoff: time.Second,
				MaxBackoff: 60 * time.Second, HealthyAfter: 60 * time.Second, StopGrace: 2 * time.Second},
		},
		{
			name: "fields that are set are kept and negative ones are defaults",
			in:   UpstreamTiming{PingEvery: 100 * time.Millisecond, PingTimeout: -1, StopGrace: time.Millisecond},
			want: UpstreamTiming{PingEvery: 100 * time.Millisecond, PingTimeout: 10 * time.Second, FirstBackoff: time.Second,
				MaxBackoff: 60 * time.Second, HealthyAfter: 60 * time.Second, StopGrace: time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.in.withDefaults(); got != tt.want {
				t.Errorf("withDefaults() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUpstreamTimingBackoff(t *testing.T) {
	t.Parallel()
	def := UpstreamTiming{}.withDefaults()
	odd := UpstreamTiming{FirstBackoff: 3 * time.Second, MaxBackoff: 10 * time.Second}.withDefaults()
	tests := []struct {
		name   string
		timing UpstreamTiming
		n      int
		want   time.Duration
	}{
		{"the first restart waits FirstBackoff", def, 1, time.Second},
		{"the second waits twice as long", def, 2, 2 * time.Second},
		{"the third four times", def, 3, 4 * time.Second},
		{"the fourth eight times", def, 4, 8 * time.Second},
		{"the fifth sixteen times", def, 5, 16 * time.Second},
		{"the sixth thirty-two times", def, 6, 32 * time.Second},
		{"the seventh is capped at MaxBackoff", def, 7, 60 * time.Second},
		{"the eighth stays at the cap", def, 8, 60 * time.Second},
		{"a very late one stays at the cap without overflowing", def, 1000, 60 * time.Second},
		{"a cap that is not a power of two caps the doubling", odd, 2, 6 * time.Second},
		{"and is reached exactly", odd, 3, 10 * time.Second},
		{"n below one waits FirstBackoff", def, 0, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.timing.backoff(tt.n); got != tt.want {
				t.Errorf("backoff(%d) = %v, want %v", tt.n, got, tt.want)
			}
		})
	}
}

// stderrLines returns the "upstream stderr" records logged (not the
// "dropped" ones).
func stderrLines(sink *logSink) []string {
	return sink.lines(`msg="upstream stderr" `)
}

func TestLogStderr(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", maxStderrLine+1000)
	var burst strings.Builder
	for i := 1; i <= stderrLinesPerSecond+50; i++ {
		fmt.Fprintf(&burst, "burst line %d\n", i)
	}
	tests := []struct {
		name string
		// write feeds the reader logStderr reads, then closes it.
		write func(w io.Writer)
		check func(t *testing.T, sink *logSink)
	}{
		{
			name: "each line is logged on its own with the logger's attributes",
			write: func(w io.Writer) {
				io.WriteString(w, "first line\nsecond line\r\nno newline at the end")
			},
			check: func(t *testing.T, sink *logSink) {
				got := stderrLines(sink)
				want := []string{`line="first line"`, `line="second line"`, `line="no newline at the end"`}
				if len(got) != len(want) {
					t.Fatalf("got %d stderr lines, want %d; log:\n%s", len(got), len(want), sink.String())
				}
				for i, l := range got {
					if !containsAll(l, []string{want[i], "server=up"}) {
						t.Errorf("line %d = %q, want it to hold %s and server=up", i, l, want[i])
					}
					if strings.Contains(l, "truncated") {
						t.Errorf("line %d = %q, want no truncated attribute", i, l)
					}
				}
			},
		},
		{
			name: "a line written in pieces is one line",
			write: func(w io.Writer) {
				io.WriteString(w, "hel")
				io.WriteString(w, "lo wor")
				io.WriteString(w, "ld\n")
			},
			check: func(t *testing.T, sink *logSink) {
				got := stderrLines(sink)
				if len(got) != 1 || !strings.Contains(got[0], `line="hello world"`) {
					t.Errorf("stderr lines = %q, want one with hello world", got)
				}
			},
		},
		{
			name: "a long line is cut and its remainder is not logged as a line of its own",
			write: func(w io.Writer) {
				io.WriteString(w, long+"\nafter\n")
			},
			check: func(t *testing.T, sink *logSink) {
				got := stderrLines(sink)
				if len(got) != 2 {
					t.Fatalf("got %d stderr lines, want 2 (the cut line and the next); log:\n%.500s", len(got), sink.String())
				}
				cut := "line=" + strings.Repeat("x", maxStderrLine) + " truncated=true"
				if !strings.Contains(got[0], cut) {
					t.Errorf("first line = %.200q…, want %d x's and truncated=true", got[0], maxStderrLine)
				}
				if strings.Contains(got[0], strings.Repeat("x", maxStderrLine+1)) {
					t.Errorf("first line holds more than %d x's", maxStderrLine)
				}
				if !strings.Contains(got[1], "line=after") || strings.Contains(got[1], "truncated") {
					t.Errorf("second line = %q, want line=after, not truncated", got[1])
				}
			},
		},
		{
			name: "a burst beyond the rate is cut and the dropped lines are counted once",
			write: func(w io.Writer) {
				io.WriteString(w, burst.String())
			},
			check: func(t *testing.T, sink *logSink) {
				got := stderrLines(sink)
				if len(got) != stderrLinesPerSecond {
					t.Fatalf("got %d stderr lines, want %d", len(got), stderrLinesPerSecond)
				}
				if last := got[len(got)-1]; !strings.Contains(last, fmt.Sprintf(`line="burst line %d"`, stderrLinesPerSecond)) {
					t.Errorf("last logged line = %q, want burst line %d: the first lines are kept", last, stderrLinesPerSecond)
				}
				dropped := sink.lines("upstream stderr lines dropped")
				if len(dropped) != 1 || !containsAll(dropped[0], []string{"dropped=50", "server=up", "level=WARN"}) {
					t.Errorf("dropped lines = %q, want one warning with dropped=50 and server=up", dropped)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log, sink := newTestLogger()
			r, w := io.Pipe()
			done := make(chan struct{})
			go func() {
				defer close(done)
				logStderr(r, log.With("server", "up"))
			}()
			tt.write(w)
			w.Close()
			receive(t, done, "the end of logStderr")
			tt.check(t, sink)
		})
	}
}

func TestUpstreamSpecEqual(t *testing.T) {
	t.Parallel()
	base := func() *config.MCPServer {
		return &config.MCPServer{Command: "/bin/up", Args: []string{"-a", "b"}, WorkingDir: "/srv",
			Env: map[string]string{"B": "2"}, FileEnv: map[string]string{"A": "1"}, InitTimeout: 10 * time.Second,
			Timeout: 30 * time.Second, NamePrefix: "up", Allow: []*config.ToolRef{{Tool: "echo"}}}
	}
	tests := []struct {
		name string
		// change makes the second entry from a copy of the first.
		change func(s *config.MCPServer)
		equal  bool
	}{
		{"a fresh copy is equal", func(*config.MCPServer) {}, true},
		{"a change of allow, deny, name_prefix or timeout is equal: the registry applies them", func(s *config.MCPServer) {
			s.Allow = append(s.Allow, &config.ToolRef{Tool: "add"})
			s.Deny = []*config.ToolRef{{Tool: "secret"}}
			s.NamePrefix = "other"
			s.Timeout = time.Second
		}, true},
		{"another command is unequal", func(s *config.MCPServer) { s.Command = "/bin/other" }, false},
		{"another arg is unequal", func(s *config.MCPServer) { s.Args[1] = "c" }, false},
		{"one more arg is unequal", func(s *config.MCPServer) { s.Args = append(s.Args, "-v") }, false},
		{"args in another order are unequal", func(s *config.MCPServer) { s.Args = []string{"b", "-a"} }, false},
		{"another working_dir is unequal", func(s *config.MCPServer) { s.WorkingDir = "/tmp" }, false},
		{"another env value is unequal", func(s *config.MCPServer) { s.Env["B"] = "3" }, false},
		{"one more env variable is unequal", func(s *config.MCPServer) { s.Env["C"] = "" }, false},
		{"an env variable renamed is unequal", func(s *config.MCPServer) { s.Env = map[string]string{"C": "2"} }, false},
		{"another file env value is unequal", func(s *config.MCPServer) { s.FileEnv["A"] = "9" }, false},
		{"a file env variable moved to env is unequal", func(s *config.MCPServer) {
			s.FileEnv = map[string]string{}
			s.Env["A"] = "1"
		}, false},
		{"another init_timeout is unequal", func(s *config.MCPServer) { s.InitTimeout = 5 * time.Second }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, b := base(), base()
			tt.change(b)
			if got := specOf(a).equal(specOf(b)); got != tt.equal {
				t.Errorf("equal = %v, want %v", got, tt.equal)
			}
			if got := specOf(b).equal(specOf(a)); got != tt.equal {
				t.Errorf("equal, the other way round = %v, want %v", got, tt.equal)
			}
		})
	}
	t.Run("no args and no env, nil or empty, are equal", func(t *testing.T) {
		t.Parallel()
		a := upstreamSpec{command: "/bin/up", args: nil, env: nil, fileEnv: map[string]string{}}
		b := upstreamSpec{command: "/bin/up", args: []string{}, env: map[string]string{}, fileEnv: nil}
		if !a.equal(b) || !b.equal(a) {
			t.Errorf("%+v and %+v are unequal, want equal", a, b)
		}
	})
	t.Run("equal copies with maps of their own are equal", func(t *testing.T) {
		t.Parallel()
		a := specOf(base())
		b := upstreamSpec{command: a.command, args: slices.Clone(a.args), workingDir: a.workingDir,
			fileEnv: maps.Clone(a.fileEnv), env: maps.Clone(a.env), initTimeout: a.initTimeout}
		if !a.equal(b) {
			t.Errorf("%+v.equal(%+v) = false, want true", a, b)
		}
	})
}

// resultText is a call result's one text, and whether it is a tool error.
func resultText(t *testing.T, r *mcp.CallToolResult) (string, bool) {
	t.Helper()
	if r == nil {
		t.Fatalf("result is nil")
	}
	var texts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), r.IsError
}
