package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/config/configtest"
)

// decided is when the grants of these tests are decided: t0 as a decision
// line records it.
var decided = t0.UTC().Truncate(time.Millisecond)

// testKey is a grants key the tests write beside a log.
var testKey = bytes.Repeat([]byte{0x5a}, keySize)

const testConfig = "/home/op/.config/wraptool/config.yaml"

func writeKey(t *testing.T, logPath string, key []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(KeyPath(logPath), key, 0o600); err != nil {
		t.Fatal(err)
	}
}

func pushRequest() Request {
	return Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--force"}, Rationale: "rebased", Enables: "push"}
}

func exactCall() *Call {
	return &Call{Tool: "git_push", Arguments: json.RawMessage(`{"args":["origin","main"],"force":true}`),
		Command: []string{"git", "push", "--force", "origin", "main"}, Cwd: "/work/repo", Dir: "2049:1234", Policy: "sha256:abcd"}
}

func onceGrant() *Grant { return &Grant{Once: true, Until: t0.Add(time.Hour), Config: testConfig} }

func timedGrant(d time.Duration) *Grant { return &Grant{Until: t0.Add(d), Config: testConfig} }

// granted submits req to a new log and approves it with g at t0; it
// returns the log's path and the request's id.
func granted(t *testing.T, req Request, g *Grant) (path, id string) {
	t.Helper()
	path = logPath(t)
	id = submit(t, path, req).ID
	if err := Decide(t.Context(), path, id, Decision{Status: StatusApproved, Reason: "ok", DecidedBy: "cli", Grant: g}, t0); err != nil {
		t.Fatalf("Decide with grant %+v: %v", g, err)
	}
	return path, id
}

// record reads the log at path and returns the record of id and the warnings.
func record(t *testing.T, path, id string) (*Record, []Warning) {
	t.Helper()
	recs, warns, err := Read(path)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	for _, r := range recs {
		if r.ID == id {
			return r, warns
		}
	}
	t.Fatalf("Read: no record %s in %s", id, show(recs))
	return nil, nil
}

func TestDecideWritesASignedGrantLine(t *testing.T) {
	t.Parallel()
	exactReq := pushRequest()
	exactReq.Call = exactCall()
	cases := []struct {
		name  string
		req   Request
		grant *Grant
		want  string // the grant object as written
	}{
		{"a once-grant is written with once, until and config",
			pushRequest(), onceGrant(),
			`{"once":true,"until":"2025-03-14T15:09:26.535Z","config":"` + testConfig + `"}`},
		{"a timed grant is written without once",
			pushRequest(), timedGrant(8 * time.Hour),
			`{"until":"2025-03-14T22:09:26.535Z","config":"` + testConfig + `"}`},
		{"a grant of the longest time allowed is written",
			pushRequest(), timedGrant(MaxFor),
			`{"until":"2025-03-21T14:09:26.535Z","config":"` + testConfig + `"}`},
		{"an exact once-grant carries exact and the call's policy hash",
			exactReq, &Grant{Once: true, Until: t0.Add(time.Hour), Exact: true, Policy: "sha256:abcd", Config: testConfig},
			`{"once":true,"until":"2025-03-14T15:09:26.535Z","exact":true,"policy":"sha256:abcd","config":"` + testConfig + `"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := granted(t, tc.req, tc.grant)
			ls := lines(t, configtest.ReadFile(t, path))
			if len(ls) != 2 {
				t.Fatalf("the log has %d lines, want 2", len(ls))
			}
			m := object(t, ls[1])
			if got, want := keys(m), []string{"applied", "decided_at", "decided_by", "grant", "id", "reason", "sig", "status"}; !slices.Equal(got, want) {
				t.Fatalf("fields %q, want exactly %q", got, want)
			}
			if got := string(m["grant"]); got != tc.want {
				t.Errorf("grant = %s, want %s", got, tc.want)
			}
			if got := string(m["applied"]); got != "false" {
				t.Errorf("applied = %s, want false", got)
			}
			var sig string
			if err := json.Unmarshal(m["sig"], &sig); err != nil || len(sig) != 64 || strings.ToLower(sig) != sig {
				t.Errorf("sig = %s, want 64 lowercase hex digits", m["sig"])
			}
			if !strings.HasPrefix(ls[1], `{"id":"`+id+`","status":"approved","decided_at":`) || !strings.HasSuffix(ls[1], `,"sig":"`+sig+`"}`) {
				t.Errorf("line %s: want id, status, decided_at first and sig last", ls[1])
			}

			r, warns := record(t, path, id)
			if len(warns) != 0 {
				t.Errorf("warnings %v, want none", warns)
			}
			if r.Status != StatusApproved || r.Grant == nil || !r.Grant.Until.Equal(tc.grant.Until.Truncate(time.Millisecond)) ||
				r.Grant.Once != tc.grant.Once || r.Grant.Exact != tc.grant.Exact || r.Grant.UsedAt != nil || r.Grant.Config != testConfig {
				t.Errorf("folded record %s, want approved with grant %+v", show([]*Record{r}), tc.grant)
			}

			key := configtest.ReadFile(t, KeyPath(path))
			info, err := os.Stat(KeyPath(path))
			if err != nil || len(key) != keySize || info.Mode().Perm() != 0o600 {
				t.Errorf("grants.key: %d bytes, mode %v, %v; want 32 bytes, 0600", len(key), info.Mode(), err)
			}
		})
	}
}

func TestDecideRefusesAnInvalidGrant(t *testing.T) {
	t.Parallel()
	exactReq := pushRequest()
	exactReq.Call = exactCall()
	used := t0
	cases := []struct {
		name string
		req  Request
		d    Decision
	}{
		{"a grant on a denial", pushRequest(), Decision{Status: StatusDenied, Grant: onceGrant()}},
		{"a grant applied to the config", pushRequest(), Decision{Status: StatusApproved, Applied: true, Grant: onceGrant()}},
		{"a grant already used", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Once: true, Until: t0.Add(time.Hour), UsedAt: &used, Config: testConfig}}},
		{"until now", pushRequest(), Decision{Status: StatusApproved, Grant: timedGrant(0)}},
		{"until in the past", pushRequest(), Decision{Status: StatusApproved, Grant: timedGrant(-time.Hour)}},
		{"a once-grant past 24h", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Once: true, Until: t0.Add(MaxOnce + time.Millisecond), Config: testConfig}}},
		{"a timed grant past 168h", pushRequest(), Decision{Status: StatusApproved, Grant: timedGrant(MaxFor + time.Millisecond)}},
		{"a relative config", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Until: t0.Add(time.Hour), Config: "config.yaml"}}},
		{"no config", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Until: t0.Add(time.Hour)}}},
		{"a policy hash on a grant that is not exact", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Until: t0.Add(time.Hour), Policy: "sha256:abcd", Config: testConfig}}},
		{"an exact grant on a request for no call", pushRequest(), Decision{Status: StatusApproved, Grant: &Grant{Once: true, Until: t0.Add(time.Hour), Exact: true, Policy: "sha256:abcd", Config: testConfig}}},
		{"an exact grant under another policy", exactReq, Decision{Status: StatusApproved, Grant: &Grant{Once: true, Until: t0.Add(time.Hour), Exact: true, Policy: "sha256:ffff", Config: testConfig}}},
		{"an exact grant without the policy", exactReq, Decision{Status: StatusApproved, Grant: &Grant{Once: true, Until: t0.Add(time.Hour), Exact: true, Config: testConfig}}},
		{"a capability grant on an exact-call request", exactReq, Decision{Status: StatusApproved, Grant: onceGrant()}},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			id := submit(t, path, tc.req).ID
			before := configtest.ReadFile(t, path)
			tc.d.DecidedBy = "cli"
			err := Decide(t.Context(), path, id, tc.d, t0)
			if !errors.Is(err, ErrInvalidGrant) || !strings.Contains(err.Error(), id) {
				t.Errorf("Decide: err %v, want ErrInvalidGrant naming %s", err, id)
			}
			if after := configtest.ReadFile(t, path); !bytes.Equal(after, before) {
				t.Errorf("a refused Decide wrote %q", after[len(before):])
			}
		})
	}
}

func TestSubmitAnExactCall(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	req := pushRequest()
	req.Call = exactCall()
	first := submit(t, path, req)
	ls := lines(t, configtest.ReadFile(t, path))
	m := object(t, ls[0])
	if got, want := keys(m), []string{"call", "created_at", "enables", "flags", "id", "rationale", "status", "subcommand", "tool"}; !slices.Equal(got, want) {
		t.Fatalf("fields %q, want exactly %q", got, want)
	}
	wantCall := `{"tool":"git_push","arguments":{"args":["origin","main"],"force":true},"command":["git","push","--force","origin","main"],"cwd":"/work/repo","dir":"2049:1234","policy":"sha256:abcd"}`
	if got := string(m["call"]); got != wantCall {
		t.Errorf("call = %s, want %s", got, wantCall)
	}
	r, _ := record(t, path, first.ID)
	if r.Call == nil || r.Call.Cwd != "/work/repo" || string(r.Call.Arguments) != `{"args":["origin","main"],"force":true}` {
		t.Errorf("folded call %+v", r.Call)
	}

	other := func(edit func(c *Call)) Request {
		r := pushRequest()
		r.Call = exactCall()
		edit(r.Call)
		return r
	}
	cases := []struct {
		name      string
		req       Request
		identical bool
	}{
		{"the same call is identical", other(func(*Call) {}), true},
		{"the same call with another rationale is identical", func() Request { r := other(func(*Call) {}); r.Rationale = "again"; return r }(), true},
		{"other arguments are another request", other(func(c *Call) { c.Arguments = json.RawMessage(`{"args":["origin","dev"],"force":true}`) }), false},
		{"another command is another request", other(func(c *Call) { c.Command = []string{"git", "push", "--force", "origin", "dev"} }), false},
		{"another cwd is another request", other(func(c *Call) { c.Cwd = "/work/other" }), false},
		{"another directory is another request", other(func(c *Call) { c.Dir = "2049:1235" }), false},
		{"another policy is another request", other(func(c *Call) { c.Policy = "sha256:ef01" }), false},
		{"another tool is another request", other(func(c *Call) { c.Tool = "git_push2" }), false},
		{"the capability without a call is another request", pushRequest(), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := submit(t, path, tc.req)
			if s.Existing != tc.identical || (s.ID == first.ID) != tc.identical {
				t.Errorf("Submit = %+v, want Existing %v (the first is %s)", s, tc.identical, first.ID)
			}
		})
	}

	t.Run("arguments null are recorded as the empty object", func(t *testing.T) {
		r := other(func(c *Call) { c.Arguments = json.RawMessage("null"); c.Cwd = "/null" })
		s := submit(t, path, r)
		rec, _ := record(t, path, s.ID)
		if string(rec.Call.Arguments) != "{}" {
			t.Errorf("arguments %s, want {}", rec.Call.Arguments)
		}
	})
}

func TestSubmitRefusesAnInvalidCall(t *testing.T) {
	t.Parallel()
	big := `{"a":"` + strings.Repeat("x", MaxArgumentsBytes) + `"}`
	cases := []struct {
		name string
		edit func(c *Call)
	}{
		{"arguments over 64 KiB", func(c *Call) { c.Arguments = json.RawMessage(big) }},
		{"a command of more than 1,000 tokens", func(c *Call) { c.Command = make([]string, MaxCommandTokens+1) }},
		{"arguments not in canonical form", func(c *Call) { c.Arguments = json.RawMessage(`{"force":true,"args":["origin","main"]}`) }},
		{"arguments with spaces", func(c *Call) { c.Arguments = json.RawMessage(`{"force": true}`) }},
		{"arguments that are not an object", func(c *Call) { c.Arguments = json.RawMessage(`["a"]`) }},
		{"arguments that are not JSON", func(c *Call) { c.Arguments = json.RawMessage(`{"a":`) }},
		{"no tool", func(c *Call) { c.Tool = "" }},
		{"no command", func(c *Call) { c.Command = nil }},
		{"a relative cwd", func(c *Call) { c.Cwd = "repo" }},
		{"no dir", func(c *Call) { c.Dir = "" }},
		{"no policy", func(c *Call) { c.Policy = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name+" is refused", func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			r := pushRequest()
			r.Call = exactCall()
			tc.edit(r.Call)
			if _, err := Submit(t.Context(), path, r, t0); !errors.Is(err, ErrInvalidCall) {
				t.Errorf("Submit: err %v, want ErrInvalidCall", err)
			}
			if _, err := os.Stat(path); err == nil && len(configtest.ReadFile(t, path)) != 0 {
				t.Errorf("a refused Submit wrote %q", configtest.ReadFile(t, path))
			}
		})
	}
	t.Run("a command of 1,000 tokens and arguments of 64 KiB are accepted", func(t *testing.T) {
		t.Parallel()
		r := pushRequest()
		r.Call = exactCall()
		r.Call.Command = make([]string, MaxCommandTokens)
		r.Call.Arguments = json.RawMessage(big[:MaxArgumentsBytes-2] + `"}`)
		if _, err := Submit(t.Context(), logPath(t), r, t0); err != nil {
			t.Errorf("Submit: %v", err)
		}
	})
}

func TestSubmitRefusesALineReadersWouldSkip(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	r := pushRequest()
	r.Rationale = strings.Repeat("r", MaxLineBytes)
	if _, err := Submit(t.Context(), path, r, t0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Submit of a %d-byte rationale: err %v, want ErrTooLarge", len(r.Rationale), err)
	}
	if data := configtest.ReadFile(t, path); len(data) != 0 {
		t.Errorf("the refused Submit wrote %d bytes", len(data))
	}
}

func TestCanonicalArguments(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{``, `{}`},
		{`null`, `{}`},
		{` {"b":1, "a":{"d":[3,2],"c":"<&>"}} `, `{"a":{"c":"<&>","d":[3,2]},"b":1}`},
		{`{"n":1.50,"e":1e3}`, `{"e":1e3,"n":1.50}`},
		{`{"s":"\u0041\u00e9"}`, `{"s":"Aé"}`},
	} {
		got, err := CanonicalArguments(json.RawMessage(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("CanonicalArguments(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
		again, err := CanonicalArguments(got)
		if err != nil || !bytes.Equal(again, got) {
			t.Errorf("CanonicalArguments is not idempotent on %s: %s, %v", got, again, err)
		}
	}
	for _, in := range []string{`[]`, `"s"`, `{"a":1} {"b":2}`, `{"a":`, `1`} {
		if got, err := CanonicalArguments(json.RawMessage(in)); err == nil {
			t.Errorf("CanonicalArguments(%s) = %s, want an error", in, got)
		}
	}
}

func TestLoadKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		key  []byte
		mode os.FileMode
		want string // in the error; "" for none
	}{
		{"a private key of 32 bytes loads", testKey, 0o600, ""},
		{"a read-only private key loads", testKey, 0o400, ""},
		{"a key readable by group and others is refused", testKey, 0o644, "readable by group, readable by others (mode 0644); run: chmod 600 "},
		{"a key writable by group is refused", testKey, 0o620, "writable by group (mode 0620); run: chmod 600 "},
		{"a key readable and writable by others is refused", testKey, 0o606, "readable and writable by others (mode 0606)"},
		{"a short key is refused", testKey[:31], 0o600, "holds 31 bytes, want 32"},
		{"an empty key is refused", nil, 0o600, "holds 0 bytes, want 32"},
		{"a long key is refused", append(slices.Clone(testKey), 'x'), 0o600, "holds more than 32 bytes, want 32"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			submit(t, path, pushRequest())
			writeKey(t, path, tc.key)
			if err := os.Chmod(KeyPath(path), tc.mode); err != nil {
				t.Fatal(err)
			}
			key, err := LoadKey(path)
			if tc.want == "" {
				if err != nil || !bytes.Equal(key, tc.key) {
					t.Errorf("LoadKey = %x, %v; want the key", key, err)
				}
				return
			}
			if !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), KeyPath(path)) {
				t.Errorf("LoadKey: err %v, want ErrBadKey naming the file and saying %q", err, tc.want)
			}
			if _, _, err := Read(path); !errors.Is(err, ErrBadKey) {
				t.Errorf("Read with the bad key: err %v, want ErrBadKey", err)
			}
			if _, err := Submit(t.Context(), path, Request{Tool: "x", Rationale: "why"}, t0); !errors.Is(err, ErrBadKey) {
				t.Errorf("Submit with the bad key: err %v, want ErrBadKey", err)
			}
		})
	}
	t.Run("a missing key is none, without an error", func(t *testing.T) {
		t.Parallel()
		if key, err := LoadKey(logPath(t)); key != nil || err != nil {
			t.Errorf("LoadKey = %x, %v; want nil, nil", key, err)
		}
	})
	t.Run("a key that is a directory is refused", func(t *testing.T) {
		t.Parallel()
		path := logPath(t)
		if err := os.MkdirAll(KeyPath(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKey(path); !errors.Is(err, ErrBadKey) {
			t.Errorf("LoadKey: err %v, want ErrBadKey", err)
		}
	})
}

func TestWritersRacingToCreateTheKeyAgree(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	const n = 20
	keys := make([][]byte, n)
	errs := make([]error, n)
	start := make(chan struct{})
	done := make(chan int)
	for i := range n {
		go func() {
			<-start
			keys[i], errs[i] = ensureKey(path)
			done <- i
		}()
	}
	close(start)
	for range n {
		<-done
	}
	for i := range n {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) || len(keys[i]) != keySize {
			t.Errorf("writer %d: key %x, %v; want %x like the others", i, keys[i], errs[i], keys[0])
		}
	}
	if got := configtest.ReadFile(t, KeyPath(path)); !bytes.Equal(got, keys[0]) {
		t.Errorf("grants.key holds %x, want %x", got, keys[0])
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("the folder holds %d files, want grants.key alone (no temporary files)", len(entries))
	}
}

// tamper edits the log at path: line i (from 0) becomes edit(line).
func tamper(t *testing.T, path string, i int, edit func(string) string) {
	t.Helper()
	ls := lines(t, configtest.ReadFile(t, path))
	ls[i] = edit(ls[i])
	if err := os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func replace(old, new string) func(string) string {
	return func(s string) string {
		if !strings.Contains(s, old) {
			panic("tamper: " + old + " is not in " + s)
		}
		return strings.Replace(s, old, new, 1)
	}
}

// A decision line that carries a grant grants nothing, and decides nothing,
// unless its signature verifies over it and the request it decides.
func TestATamperedGrantGrantsNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		grant *Grant
		edit  func(t *testing.T, path, id string)
		// valid: the edit keeps the grant (a control).
		valid bool
	}{
		{"an until moved later", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 1, replace(`"until":"2025-03-14T15:09:26.535Z"`, `"until":"2025-03-14T16:09:26.535Z"`))
			}, false},
		{"a once-grant made timed", onceGrant(),
			func(t *testing.T, path, _ string) { tamper(t, path, 1, replace(`"once":true,`, ``)) }, false},
		{"another config", onceGrant(),
			func(t *testing.T, path, _ string) { tamper(t, path, 1, replace(testConfig, "/tmp/config.yaml")) }, false},
		{"another reason", onceGrant(),
			func(t *testing.T, path, _ string) { tamper(t, path, 1, replace(`"reason":"ok"`, `"reason":"fine"`)) }, false},
		{"a flag added to the request line", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 0, replace(`"flags":["--force"]`, `"flags":["--force","--mirror"]`))
			}, false},
		{"another subcommand in the request line", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 0, replace(`"subcommand":["push"]`, `"subcommand":["pull"]`))
			}, false},
		{"a changed rationale in the request line", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 0, replace(`"rationale":"rebased"`, `"rationale":"rebase"`))
			}, false},
		{"a sig changed in one digit", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 1, func(s string) string {
					i, c := len(s)-3, "0"
					if s[i] == '0' {
						c = "1"
					}
					return s[:i] + c + s[i+1:]
				})
			}, false},
		{"no sig", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 1, func(s string) string { return s[:strings.Index(s, `,"sig"`)] + "}" })
			}, false},
		{"a sig that is not hex", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 1, func(s string) string { return s[:strings.Index(s, `,"sig"`)] + `,"sig":"zz"}` })
			}, false},
		{"the key removed", onceGrant(),
			func(t *testing.T, path, _ string) {
				if err := os.Remove(KeyPath(path)); err != nil {
					t.Fatal(err)
				}
			}, false},
		{"the key replaced", onceGrant(),
			func(t *testing.T, path, _ string) { writeKey(t, path, testKey) }, false},
		{"spaces and another field order change nothing", onceGrant(),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 0, replace(`,"tool":"git",`, `, "tool" : "git" ,`))
				tamper(t, path, 1, replace(`"status":"approved","decided_at"`, `"decided_at"`))
				tamper(t, path, 1, replace(`"applied":false`, `"status":"approved" ,	"applied":false`))
			}, true},
		{"another time zone offset for the same instants changes nothing", timedGrant(8 * time.Hour),
			func(t *testing.T, path, _ string) {
				tamper(t, path, 1, replace(`"until":"2025-03-14T22:09:26.535Z"`, `"until":"2025-03-14T23:09:26.535+01:00"`))
			}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := granted(t, pushRequest(), tc.grant)
			tc.edit(t, path, id)
			r, warns := record(t, path, id)
			if tc.valid {
				if r.Status != StatusApproved || r.Grant == nil || len(warns) != 0 {
					t.Errorf("record %s, warnings %v; want the grant in force", show([]*Record{r}), warns)
				}
				return
			}
			if r.Status != StatusPending || r.Grant != nil || r.DecidedAt != nil {
				t.Errorf("record %s, want it pending, as if the decision were not there", show([]*Record{r}))
			}
			if len(warns) != 1 || warns[0].Line != 2 || !strings.Contains(warns[0].Err, id) {
				t.Errorf("warnings %v, want one for line 2 naming %s", warns, id)
			}
			if _, err := Open(path).UseGrant(t.Context(), id, t0); !errors.Is(err, ErrNoGrant) {
				t.Errorf("UseGrant: err %v, want ErrNoGrant", err)
			}
			if _, err := Submit(t.Context(), path, pushRequest(), t0); err != nil {
				t.Errorf("Submit after the tampering: %v", err)
			}
		})
	}
}

func TestAGrantLineMovedToAnotherRequestGrantsNothing(t *testing.T) {
	t.Parallel()
	path, a := granted(t, pushRequest(), onceGrant())
	b := submit(t, path, Request{Tool: "git", Subcommand: []string{"push"}, Flags: []string{"--mirror"}, Rationale: "why"}).ID
	ls := lines(t, configtest.ReadFile(t, path))
	appendRaw(t, path, strings.Replace(ls[1], a, b, 1)+"\n")
	if r, warns := record(t, path, b); r.Status != StatusPending || r.Grant != nil || len(warns) != 1 || warns[0].Line != 4 {
		t.Errorf("record %s, warnings %v; want %s pending and a warning for line 4", show([]*Record{r}), warns, b)
	}
	if r, _ := record(t, path, a); r.Grant == nil {
		t.Errorf("record %s lost its own grant", show([]*Record{r}))
	}
}

func TestAGrantLineFromAnotherLogGrantsNothing(t *testing.T) {
	t.Parallel()
	path, _ := granted(t, pushRequest(), onceGrant())
	other, id := granted(t, Request{Tool: "git", Subcommand: []string{"fetch"}, Rationale: "why"}, onceGrant())
	if bytes.Equal(configtest.ReadFile(t, KeyPath(path)), configtest.ReadFile(t, KeyPath(other))) {
		t.Fatal("two logs drew the same key")
	}
	appendRaw(t, path, string(configtest.ReadFile(t, other)))
	r, warns := record(t, path, id)
	if r.Status != StatusPending || r.Grant != nil || len(warns) != 1 || warns[0].Line != 4 {
		t.Errorf("record %s, warnings %v; want it pending and a warning for line 4", show([]*Record{r}), warns)
	}
}

// signedLine returns a decision line for the request line req (as written
// in a log), signed with key whatever it holds: what a writer with a bug,
// or with the key, could write.
func signedLine(t *testing.T, key []byte, req string, d decisionLine) string {
	t.Helper()
	var rl line
	if err := json.Unmarshal([]byte(req), &rl); err != nil {
		t.Fatal(err)
	}
	d, err := signed(key, d, requestDigest(&rl))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// A line signed with the key still grants nothing when its grant breaks a
// rule every reader checks.
func TestASignedGrantThatBreaksTheRulesGrantsNothing(t *testing.T) {
	t.Parallel()
	exactReq := pushRequest()
	exactReq.Call = exactCall()
	base := func(g Grant) decisionLine {
		return decisionLine{Status: StatusApproved, DecidedAt: decided, Reason: "ok", DecidedBy: "cli", Grant: &g}
	}
	used := decided.Add(time.Minute)
	cases := []struct {
		name  string
		req   Request
		d     decisionLine
		valid bool
	}{
		{"a once-grant of exactly 24h stands", pushRequest(), base(Grant{Once: true, Until: decided.Add(MaxOnce), Config: testConfig}), true},
		{"a once-grant of 24h and 1ms", pushRequest(), base(Grant{Once: true, Until: decided.Add(MaxOnce + time.Millisecond), Config: testConfig}), false},
		{"a timed grant of exactly 168h stands", pushRequest(), base(Grant{Until: decided.Add(MaxFor), Config: testConfig}), true},
		{"a timed grant of 168h and 1ms", pushRequest(), base(Grant{Until: decided.Add(MaxFor + time.Millisecond), Config: testConfig}), false},
		{"until at decided_at", pushRequest(), base(Grant{Until: decided, Config: testConfig}), false},
		{"until before decided_at", pushRequest(), base(Grant{Once: true, Until: decided.Add(-time.Hour), Config: testConfig}), false},
		{"no decided_at", pushRequest(), decisionLine{Status: StatusApproved, Grant: &Grant{Once: true, Until: decided.Add(time.Hour), Config: testConfig}}, false},
		{"a relative config", pushRequest(), base(Grant{Once: true, Until: decided.Add(time.Hour), Config: "c.yaml"}), false},
		{"a grant on a denial", pushRequest(), func() decisionLine {
			d := base(Grant{Once: true, Until: decided.Add(time.Hour), Config: testConfig})
			d.Status = StatusDenied
			return d
		}(), false},
		{"a grant applied", pushRequest(), func() decisionLine {
			d := base(Grant{Once: true, Until: decided.Add(time.Hour), Config: testConfig})
			d.Applied = true
			return d
		}(), false},
		{"an exact grant on a request for no call", pushRequest(), base(Grant{Once: true, Exact: true, Policy: "sha256:abcd", Until: decided.Add(time.Hour), Config: testConfig}), false},
		{"an exact grant under another policy", exactReq, base(Grant{Once: true, Exact: true, Policy: "sha256:ffff", Until: decided.Add(time.Hour), Config: testConfig}), false},
		{"an exact grant under the call's policy stands", exactReq, base(Grant{Once: true, Exact: true, Policy: "sha256:abcd", Until: decided.Add(time.Hour), Config: testConfig}), true},
		{"a used_at with no grant in force", pushRequest(), base(Grant{Once: true, Until: decided.Add(time.Hour), UsedAt: &used, Config: testConfig}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := logPath(t)
			writeKey(t, path, testKey)
			id := submit(t, path, tc.req).ID
			tc.d.ID = id
			appendRaw(t, path, signedLine(t, testKey, lines(t, configtest.ReadFile(t, path))[0], tc.d)+"\n")
			r, warns := record(t, path, id)
			if tc.valid {
				if r.Status != StatusApproved || r.Grant == nil || len(warns) != 0 {
					t.Errorf("record %s, warnings %v; want the grant in force", show([]*Record{r}), warns)
				}
				return
			}
			if r.Status != StatusPending || r.Grant != nil || len(warns) != 1 || warns[0].Line != 2 {
				t.Errorf("record %s, warnings %v; want it pending and one warning for line 2", show([]*Record{r}), warns)
			}
		})
	}
}

func TestUsedAtLinesMustRepeatTheGrant(t *testing.T) {
	t.Parallel()
	used := decided.Add(time.Minute)
	cases := []struct {
		name  string
		grant *Grant
		edit  func(d *decisionLine)
		valid bool
	}{
		{"the same decision with used_at marks it used", onceGrant(), func(*decisionLine) {}, true},
		{"another until", onceGrant(), func(d *decisionLine) { d.Grant.Until = d.Grant.Until.Add(time.Minute) }, false},
		{"another config", onceGrant(), func(d *decisionLine) { d.Grant.Config = "/other.yaml" }, false},
		{"another decided_at", onceGrant(), func(d *decisionLine) { d.DecidedAt = d.DecidedAt.Add(time.Second) }, false},
		{"another reason", onceGrant(), func(d *decisionLine) { d.Reason = "other" }, false},
		{"a use of a timed grant", timedGrant(time.Hour), func(*decisionLine) {}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path, id := granted(t, pushRequest(), tc.grant)
			ls := lines(t, configtest.ReadFile(t, path))
			var l line
			if err := json.Unmarshal([]byte(ls[1]), &l); err != nil {
				t.Fatal(err)
			}
			d := l.decision()
			g := *d.Grant
			g.UsedAt, d.Grant = &used, &g
			tc.edit(&d)
			appendRaw(t, path, signedLine(t, configtest.ReadFile(t, KeyPath(path)), ls[0], d)+"\n")
			r, warns := record(t, path, id)
			if r.Status != StatusApproved || r.Grant == nil {
				t.Fatalf("record %s, want the grant approved still", show([]*Record{r}))
			}
			if tc.valid {
				if r.Grant.UsedAt == nil || !r.Grant.UsedAt.Equal(used) || len(warns) != 0 {
					t.Errorf("record %s, warnings %v; want it used at %v", show([]*Record{r}), warns, used)
				}
				return
			}
			if r.Grant.UsedAt != nil || len(warns) != 1 || warns[0].Line != 3 {
				t.Errorf("record %s, warnings %v; want it unused and one warning for line 3", show([]*Record{r}), warns)
			}
		})
	}
}

func TestFoldWithoutAKeyIgnoresGrants(t *testing.T) {
	t.Parallel()
	path, id := granted(t, pushRequest(), onceGrant())
	recs, warns, err := Fold(bytes.NewReader(configtest.ReadFile(t, path)))
	if err != nil || len(recs) != 1 || recs[0].Status != StatusPending || recs[0].Grant != nil {
		t.Errorf("Fold = %s, %v; want %s pending", show(recs), err, id)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Err, "no grants key") {
		t.Errorf("warnings %v, want one saying there is no grants key", warns)
	}
	recs, warns, err = FoldKeyed(bytes.NewReader(configtest.ReadFile(t, path)), configtest.ReadFile(t, KeyPath(path)))
	if err != nil || len(warns) != 0 || len(recs) != 1 || recs[0].Grant == nil {
		t.Errorf("FoldKeyed = %s, %v, %v; want the grant", show(recs), warns, err)
	}
}

func TestDecideRecordsTheClient(t *testing.T) {
	t.Parallel()
	path := logPath(t)
	id := submit(t, path, pushRequest()).ID
	if err := Decide(t.Context(), path, id, Decision{Status: StatusApproved, DecidedBy: "client", Client: "claude", Grant: onceGrant()}, t0); err != nil {
		t.Fatal(err)
	}
	if m := object(t, lines(t, configtest.ReadFile(t, path))[1]); string(m["client"]) != `"claude"` {
		t.Errorf("client = %s, want \"claude\"", m["client"])
	}
	r, warns := record(t, path, id)
	if r.Client != "claude" || r.Grant == nil || len(warns) != 0 {
		t.Errorf("record %s, warnings %v; want client claude and the grant", show([]*Record{r}), warns)
	}
	tamper(t, path, 1, replace(`"client":"claude"`, `"client":"other"`))
	if r, _ := record(t, path, id); r.Grant != nil {
		t.Errorf("a grant whose client was changed still stands: %s", show([]*Record{r}))
	}
}

func TestGrantStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	used := now.Add(-time.Minute)
	rec := func(status string, g *Grant) *Record { return &Record{Status: status, Grant: g} }
	for _, tc := range []struct {
		name string
		r    *Record
		want string
	}{
		{"a pending request", rec(StatusPending, nil), "pending"},
		{"an approval without a grant", rec(StatusApproved, nil), "approved"},
		{"a denial", rec(StatusDenied, nil), "denied"},
		{"an unused once-grant", rec(StatusApproved, &Grant{Once: true, Until: now.Add(time.Hour)}), "approved once"},
		{"a used once-grant", rec(StatusApproved, &Grant{Once: true, Until: now.Add(time.Hour), UsedAt: &used}), "approved once, used"},
		{"a used once-grant past its until", rec(StatusApproved, &Grant{Once: true, Until: now.Add(-time.Hour), UsedAt: &used}), "approved once, used"},
		{"an expired once-grant", rec(StatusApproved, &Grant{Once: true, Until: now}), "approved once, expired"},
		{"a timed grant today", rec(StatusApproved, &Grant{Until: time.Date(2026, 12, 1, 18, 30, 59, 0, time.UTC)}), "approved until 18:30Z"},
		{"a timed grant shown in UTC", rec(StatusApproved, &Grant{Until: time.Date(2026, 12, 1, 19, 30, 0, 0, time.FixedZone("CET", 3600))}), "approved until 18:30Z"},
		{"a timed grant 24h away", rec(StatusApproved, &Grant{Until: now.Add(24 * time.Hour)}), "approved until 12:00Z"},
		{"a timed grant further away shows its date", rec(StatusApproved, &Grant{Until: now.Add(24*time.Hour + time.Minute)}), "approved until 2026-12-02 12:01Z"},
		{"an expired timed grant", rec(StatusApproved, &Grant{Until: now.Add(-30 * time.Minute)}), "approved until 11:30Z, expired"},
		{"a grant that expired days ago shows its date", rec(StatusApproved, &Grant{Until: now.Add(-72 * time.Hour)}), "approved until 2026-11-28 12:00Z, expired"},
	} {
		if got := GrantStatus(tc.r, now); got != tc.want {
			t.Errorf("%s: GrantStatus = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestActiveGrants(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(h int) *time.Time { d := now.Add(time.Duration(h) * time.Hour); return &d }
	recs := []*Record{
		{ID: "newer once", Status: StatusApproved, DecidedAt: at(-1), Grant: &Grant{Once: true, Until: now.Add(time.Hour)}},
		{ID: "used", Status: StatusApproved, DecidedAt: at(-5), Grant: &Grant{Once: true, Until: now.Add(time.Hour), UsedAt: at(-1)}},
		{ID: "expired", Status: StatusApproved, DecidedAt: at(-5), Grant: &Grant{Until: now}},
		{ID: "timed", Status: StatusApproved, DecidedAt: at(-3), Grant: &Grant{Until: now.Add(time.Minute)}},
		{ID: "no grant", Status: StatusApproved, DecidedAt: at(-9)},
		{ID: "pending", Status: StatusPending},
		{ID: "older once", Status: StatusApproved, DecidedAt: at(-4), Grant: &Grant{Once: true, Until: now.Add(20 * time.Hour)}},
	}
	var got []string
	for _, r := range ActiveGrants(recs, now) {
		got = append(got, r.ID)
	}
	if want := []string{"older once", "timed", "newer once"}; !slices.Equal(got, want) {
		t.Errorf("ActiveGrants = %q, want %q", got, want)
	}
	if got := ActiveGrants(nil, now); got != nil {
		t.Errorf("ActiveGrants(nil) = %v, want nil", got)
	}
}
