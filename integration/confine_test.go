//go:build linux

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wraptool/wraptool/integration/waittest"
	"github.com/wraptool/wraptool/policy/config/configtest"
	"github.com/wraptool/wraptool/toolset/toolsettest"
)

// The kernel confines every process wraptool starts (wrapped tools,
// introspection's help runs, on_request hooks, upstream MCP servers, and
// whatever those start): none of them can read, write, create, remove,
// rename, link, truncate or run wraptool's own files, by any path, link or
// race, while the user's own files stay theirs. These tests start the built
// binary on a home folder laid out as an operator's (a gate, below) and let
// testdata/attacker, run in each of those roles, try every way in.

// landlockABI asks the kernel which Landlock ABI it offers
// (landlock_create_ruleset with LANDLOCK_CREATE_RULESET_VERSION; the
// syscall has one number on every architecture); 0 when it offers none.
func landlockABI() int {
	const sysLandlockCreateRuleset, createRulesetVersion = 444, 1
	v, _, errno := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
}

// requireLandlock skips a test that needs a kernel able to confine, or
// fails it under CI, where the kernel must be able to.
func requireLandlock(t *testing.T) {
	t.Helper()
	if landlockABI() < 1 {
		if os.Getenv("CI") != "" {
			t.Fatal("this kernel offers no Landlock, and CI needs it to prove confinement")
		}
		t.Skip("this kernel offers no Landlock")
	}
}

var (
	attackerOnce sync.Once
	attackerPath string
	attackerErr  error
)

// attackerBinary builds testdata/attacker once, beside the wraptool binary
// (TestMain removes that folder when the tests end).
func attackerBinary(t *testing.T) string {
	t.Helper()
	attackerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		out := filepath.Join(filepath.Dir(wraptoolBin), "attacker")
		build := exec.CommandContext(ctx, "go", "build", "-o", out, "./testdata/attacker")
		if msg, err := build.CombinedOutput(); err != nil {
			attackerErr = fmt.Errorf("build testdata/attacker: %v\n%s", err, msg)
			return
		}
		attackerPath = out
	})
	if attackerErr != nil {
		t.Fatal(attackerErr)
	}
	return attackerPath
}

// gate is an operator's home folder with wraptool's files where wraptool
// puts them by default ($XDG_CONFIG_HOME/wraptool, $XDG_DATA_HOME/wraptool,
// $XDG_CACHE_HOME/wraptool), an overrides file kept beside an ordinary file
// elsewhere, the user's own credentials, and the attacker installed as the
// user's own binary.
type gate struct {
	home, configHome, dataHome, cacheHome string
	cfgDir, dataDir, cacheDir, introDir   string
	configPath                            string
	mcpToken, adminToken, elicitToken     string // paths
	envFile, overrides                    string
	requestLog, auditLog, auditOld        string
	grantsKey                             string
	etcDir                                string
	socket                                string // "" for a TCP listener
	toolBin                               string // the attacker, as the tool's binary
	work                                  string // the calls' cwd: holds no protected item
	attackDir, reportDir, planPath        string
	workDir                               string // scratch of the modes that own no cwd
	sshKey                                string
	// marker is the config's first line, a comment: seeing it anywhere
	// means the config was read.
	marker string
	// envSecret is in wraptool's own environment only.
	envSecret string
	// secrets are every byte string no output may carry: the tokens, the
	// grants key, the markers of the config, env file, overrides file and
	// old audit log, and envSecret.
	secrets map[string][]byte
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newGate lays a gate out in a fresh temporary folder; unix makes the
// server listen on a unix socket (in a short folder of its own), which is
// then protected too, and spares the harness's TCP health wait.
func newGate(t *testing.T, unix bool) *gate {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	g := &gate{
		home:       home,
		configHome: filepath.Join(home, ".config"),
		dataHome:   filepath.Join(home, ".local", "share"),
		cacheHome:  filepath.Join(home, ".cache"),
		etcDir:     filepath.Join(home, "etc"),
		work:       filepath.Join(home, "work"),
		attackDir:  filepath.Join(home, "attack"),
		sshKey:     filepath.Join(home, ".ssh", "id_test"),
		secrets:    map[string][]byte{},
	}
	g.cfgDir = filepath.Join(g.configHome, "wraptool")
	g.dataDir = filepath.Join(g.dataHome, "wraptool")
	g.cacheDir = filepath.Join(g.cacheHome, "wraptool")
	g.introDir = filepath.Join(g.cacheDir, "introspection")
	g.configPath = filepath.Join(g.cfgDir, "config.yaml")
	g.mcpToken = filepath.Join(g.cfgDir, "mcp-token")
	g.adminToken = filepath.Join(g.cfgDir, "admin-token")
	g.elicitToken = filepath.Join(g.cfgDir, "elicit-token")
	g.envFile = filepath.Join(g.cfgDir, "attacker.env")
	g.overrides = filepath.Join(g.etcDir, "overrides.yaml")
	g.requestLog = filepath.Join(g.dataDir, "requests.jsonl")
	g.auditLog = filepath.Join(g.dataDir, "audit.jsonl")
	g.auditOld = filepath.Join(g.dataDir, "audit.jsonl.1")
	g.grantsKey = filepath.Join(g.dataDir, "grants.key")
	g.toolBin = filepath.Join(home, "bin", "attacker")
	g.reportDir = filepath.Join(g.attackDir, "reports")
	g.planPath = filepath.Join(g.attackDir, "plan.json")
	g.workDir = filepath.Join(g.attackDir, "work")
	if unix {
		g.socket = filepath.Join(shortTempDir(t), "s")
	}
	for _, d := range []string{g.cfgDir, g.dataDir, g.introDir, g.etcDir, g.work, g.reportDir, g.workDir,
		filepath.Join(home, "bin"), filepath.Join(g.configHome, "gcloud"), filepath.Join(home, "src")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for name, path := range map[string]string{"the MCP token": g.mcpToken, "the admin token": g.adminToken, "the elicit_clients token": g.elicitToken} {
		token := randomHex(t, 32)
		g.secrets[name] = []byte(token)
		configtest.WriteFile(t, path, token+"\n", 0o600)
	}
	key := make([]byte, 32)
	rand.Read(key)
	g.secrets["the grants key"] = key
	configtest.WriteFile(t, g.grantsKey, string(key), 0o600)
	envMarker := "env-file-marker-" + randomHex(t, 8)
	configtest.WriteFile(t, g.envFile, "# "+envMarker+"\nATTACK_FROM_ENV_FILE=1\n", 0o600)
	g.secrets["the env file"] = []byte(envMarker)
	overridesMarker := "overrides-marker-" + randomHex(t, 8)
	configtest.WriteFile(t, g.overrides, "# "+overridesMarker+"\nsubcommands:\n  run:\n    description: \"Attack the gate\"\n", 0o600)
	g.secrets["the overrides file"] = []byte(overridesMarker)
	auditMarker := "audit-marker-" + randomHex(t, 8)
	configtest.WriteFile(t, g.auditOld, `{"event":"call","note":"`+auditMarker+`"}`+"\n", 0o600)
	g.secrets["the rotated audit log"] = []byte(auditMarker)
	configtest.WriteFile(t, g.requestLog, "", 0o600)
	configtest.WriteFile(t, g.auditLog, "", 0o600)
	g.marker = "config-marker-" + randomHex(t, 8)
	g.secrets["the config"] = []byte(g.marker)
	g.envSecret = "wraptool-env-secret-" + randomHex(t, 8)
	g.secrets["wraptool's environment"] = []byte(g.envSecret)

	// The user's own files: a key, another tool's config, and ordinary
	// files directly in folders above wraptool's.
	configtest.WriteFile(t, g.sshKey, "-----BEGIN TEST KEY-----\nnot a secret of wraptool's\n", 0o600)
	configtest.WriteFile(t, filepath.Join(g.configHome, "gcloud", "credentials.db"), "the user's gcloud login\n", 0o600)
	configtest.WriteFile(t, filepath.Join(home, ".profile"), "export EDITOR=vi\n", 0o600)
	configtest.WriteFile(t, filepath.Join(g.configHome, "other.conf"), "other=1\n", 0o600)
	configtest.WriteFile(t, filepath.Join(g.etcDir, "notes.txt"), "notes beside the overrides\n", 0o600)

	data, err := os.ReadFile(attackerBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	configtest.WriteFile(t, g.toolBin, string(data), 0o700)
	return g
}

// env is the server's environment beyond the harness's HOME and PATH: the
// gate's HOME and XDG folders, and a secret only wraptool's environment holds.
func (g *gate) env() []string {
	return []string{"HOME=" + g.home, "XDG_CONFIG_HOME=" + g.configHome, "XDG_DATA_HOME=" + g.dataHome,
		"XDG_CACHE_HOME=" + g.cacheHome, "WRAPTOOL_TEST_SECRET=" + g.envSecret}
}

// config is the gate's config: every token file, the listener (the socket
// when the gate has one), the admin listener, cwd roots at home, mcpExtra
// added to mcp: (indented already) and tools (the YAML of tools:, "{}"
// when empty) and servers (mcp_servers:, optional). It never names the
// confinement setting: the default must confine.
func (g *gate) config(t *testing.T, mcpExtra, tools, servers string) string {
	t.Helper()
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	transport := ""
	if g.socket != "" {
		transport, listen = "  transport: unix\n", g.socket
	}
	if tools == "" {
		tools = " {}\n"
	} else {
		tools = "\n" + tools
	}
	cfg := "# " + g.marker + "\n" +
		"mcp:\n" + transport +
		"  listen: " + listen + "\n" +
		"  auth_token_file: " + g.mcpToken + "\n" +
		"  allowed_cwd_roots: [" + g.home + "]\n" +
		"  elicit_clients:\n    - name: desk\n      token_file: " + g.elicitToken + "\n" +
		mcpExtra +
		fmt.Sprintf("admin:\n  listen: 127.0.0.1:%d\n  auth_token_file: %s\n", freePort(t), g.adminToken) +
		"tools:" + tools
	if servers != "" {
		cfg += "mcp_servers:\n" + servers
	}
	return cfg
}

// attackerTool is the tools: entry wrapping the attacker: `attacker run
// [mode]`, with the plan and the env file; help says whether its help runs
// (introspection) attack too.
func (g *gate) attackerTool(help string) string {
	return `  attacker:
    binary: ` + g.toolBin + `
    env_files: [` + g.envFile + `]
    env: {ATTACK_PLAN: "` + g.planPath + `", ATTACK_HELP: ` + help + `}
    introspection:
      overrides_file: ` + g.overrides + `
    allow:
      - subcommand: [run]
        flags: ["--verbose"]
        flag_constraints: {"--verbose": {type: boolean}}
        arg_constraints: {positional_max: 1, pattern: "[a-z-]+"}
`
}

// start writes cfg and serves it with the gate's environment.
func (g *gate) start(t *testing.T, cfg string) *server {
	t.Helper()
	return startServerIn(t, g.cfgDir, cfg, g.env()...)
}

// attackTarget is one entry of the attacker's plan.
type attackTarget struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	ExecArg string `json:"exec_arg,omitempty"`
}

// targets are every path the attacker tries, by kind: wraptool's files and
// folders, the folders above them, the binaries it starts, and the user's
// own files beside them.
func (g *gate) targets(t *testing.T) []attackTarget {
	t.Helper()
	var ts []attackTarget
	add := func(kind string, paths ...string) {
		for _, p := range paths {
			ts = append(ts, attackTarget{Kind: kind, Path: p})
		}
	}
	add("protect", g.configPath, g.mcpToken, g.adminToken, g.elicitToken, g.envFile, g.overrides,
		g.requestLog, g.grantsKey, g.auditLog, g.auditOld)
	entries, _ := filepath.Glob(filepath.Join(g.introDir, "*.json"))
	add("protect", entries...)
	add("pdir", g.cfgDir, g.dataDir, g.cacheDir, g.introDir)
	add("above", g.home, g.configHome, filepath.Dir(g.dataHome), g.dataHome, g.cacheHome, g.etcDir)
	if g.socket != "" {
		add("protect", g.socket)
		add("above", filepath.Dir(g.socket))
	}
	ts = append(ts, attackTarget{Kind: "wprotect", Path: g.toolBin, ExecArg: "--version"},
		attackTarget{Kind: "wprotect", Path: wraptoolBin, ExecArg: "version"})
	add("sibling", filepath.Join(g.home, ".profile"), filepath.Join(g.configHome, "other.conf"), filepath.Join(g.etcDir, "notes.txt"))
	add("free", g.sshKey, filepath.Join(g.configHome, "gcloud", "credentials.db"))
	return ts
}

// attackPlan is the attacker's plan file.
type attackPlan struct {
	Targets   []attackTarget `json:"targets"`
	ReportDir string         `json:"report_dir"`
	WorkDir   string         `json:"work_dir"`
	Race      struct {
		Dir     string  `json:"dir"`
		File    string  `json:"file"`
		Seconds float64 `json:"seconds"`
	} `json:"race"`
}

// writePlan writes the plan with the gate's targets as they are now (the
// introspection cache's entries included) and returns it.
func (g *gate) writePlan(t *testing.T) attackPlan {
	t.Helper()
	p := attackPlan{Targets: g.targets(t), ReportDir: g.reportDir, WorkDir: g.workDir}
	p.Race.Dir, p.Race.File, p.Race.Seconds = g.cfgDir, g.configPath, 2
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	configtest.WriteFile(t, g.planPath, string(data), 0o600)
	return p
}

// fileState is what a file is: its bytes' hash and its identity.
type fileState struct {
	exists   bool
	sum      [32]byte
	data     []byte
	dev, ino uint64
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return fileState{}
		}
		t.Fatal(err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileState{exists: true, sum: sha256.Sum256(data), data: data, dev: uint64(st.Dev), ino: st.Ino}
}

// fingerprint is the state of every protected file: those nothing but the
// operator writes (whole), the two logs the server appends to (as a prefix),
// and the binaries wraptool starts (bytes and identity).
type fingerprint struct {
	fixed, appended, binaries map[string]fileState
}

func (g *gate) fingerprint(t *testing.T, extraBinaries ...string) fingerprint {
	t.Helper()
	f := fingerprint{fixed: map[string]fileState{}, appended: map[string]fileState{}, binaries: map[string]fileState{}}
	entries, _ := filepath.Glob(filepath.Join(g.introDir, "*.json"))
	for _, p := range append([]string{g.configPath, g.mcpToken, g.adminToken, g.elicitToken, g.envFile, g.overrides,
		g.grantsKey, g.auditOld}, entries...) {
		f.fixed[p] = stateOf(t, p)
	}
	for _, p := range []string{g.requestLog, g.auditLog} {
		f.appended[p] = stateOf(t, p)
	}
	for _, p := range append([]string{g.toolBin, wraptoolBin}, extraBinaries...) {
		f.binaries[p] = stateOf(t, p)
	}
	return f
}

// checkUnchanged fails for each protected file that is not as before was.
func (g *gate) checkUnchanged(t *testing.T, before fingerprint) {
	t.Helper()
	for _, p := range sortedKeys(before.fixed) {
		was, now := before.fixed[p], stateOf(t, p)
		if was.exists != now.exists || was.sum != now.sum {
			t.Errorf("%s changed: was %d bytes (%q…), now exists=%v %d bytes (%q…)", g.short(p), len(was.data), head(was.data), now.exists, len(now.data), head(now.data))
		}
	}
	for _, p := range sortedKeys(before.appended) {
		was, now := before.appended[p], stateOf(t, p)
		if !now.exists || !bytes.HasPrefix(now.data, was.data) {
			t.Errorf("%s was not only appended to: was %d bytes, now exists=%v %d bytes (%q…)", g.short(p), len(was.data), now.exists, len(now.data), head(now.data))
		}
	}
	for _, p := range sortedKeys(before.binaries) {
		was, now := before.binaries[p], stateOf(t, p)
		if !now.exists || was.sum != now.sum || was.dev != now.dev || was.ino != now.ino {
			t.Errorf("the binary %s was replaced or changed (inode %d → %d, same bytes %v)", g.short(p), was.ino, now.ino, was.sum == now.sum)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func head(b []byte) string {
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

// checkNoSecrets fails when any output holds a secret, as its bytes or as
// the hex the attacker reports reads in.
func (g *gate) checkNoSecrets(t *testing.T, outputs map[string]string) {
	t.Helper()
	for _, name := range sortedKeys(outputs) {
		out := outputs[name]
		for _, what := range sortedKeys(g.secrets) {
			s := g.secrets[what]
			if bytes.Contains([]byte(out), s) || strings.Contains(out, hex.EncodeToString(s)) {
				t.Errorf("%s holds %s", name, what)
			}
		}
	}
}

// attackAttempt and attackReport mirror the attacker's report.
type attackAttempt struct {
	Target, Kind, Op, Via, Path string
	OK                          bool
	Err, Data, Out              string
}

type attackRace struct {
	Swaps      int    `json:"swaps"`
	SwapErrors int    `json:"swap_errors"`
	Writes     int    `json:"writes"`
	Denied     int    `json:"denied"`
	Missed     int    `json:"missed"`
	Hits       int    `json:"hits"`
	LastErr    string `json:"last_error"`
}

type attackReport struct {
	Mode        string
	PID, PPID   int
	WraptoolPID int `json:"wraptool_pid"`
	Attempts    []attackAttempt
	Race        *attackRace
	Error       string
	file        string
	raw         string
}

// reportsOf reads the whole reports of mode in dir.
func reportsOf(t *testing.T, dir, mode string) []attackReport {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, mode+"-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []attackReport
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		r := attackReport{file: name, raw: string(data)}
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, r)
	}
	return out
}

// waitReports waits (bounded) for n reports of mode and returns them.
func waitReports(t *testing.T, s *server, dir, mode string, n int) []attackReport {
	t.Helper()
	waittest.Until(t, eventTimeout, func() error {
		if names, _ := filepath.Glob(filepath.Join(dir, mode+"-*.json")); len(names) < n {
			return fmt.Errorf("the attacker's %s report: %d of %d\n%s", mode, len(names), n, s.Log())
		}
		return nil
	})
	return reportsOf(t, dir, mode)
}

// What the attacker must fail at, by kind, through every path; and what it
// must manage through the direct path (the other spellings of the user's
// own files may fail: /proc/<wraptool>/root is wraptool's to deny).
var (
	attackMustFail = map[string][]string{
		"protect": {"read", "write", "open-trunc", "truncate", "create-at", "create-beside", "rename-over", "rename-away",
			"link", "read-via-hardlink", "write-via-hardlink", "unlink", "symlink-read", "symlink-write", "exec"},
		"wprotect": {"write", "open-trunc", "truncate", "rename-over", "rename-away", "write-via-hardlink", "unlink", "symlink-write"},
		"pdir":     {"create-inside", "mkdir-inside", "symlink-inside", "rename-into", "rename-away"},
		"above":    {"create-inside", "mkdir-inside", "symlink-inside", "rename-into"},
		"sibling":  {"rename-away", "unlink"},
		"proc":     {"read", "open-mem", "open-fd"},
	}
	attackMustWork = map[string][]string{
		"wprotect": {"read", "exec"},
		"pdir":     {"list"},
		"above":    {"list"},
		"sibling":  {"read"},
		"free":     {"read", "write", "create-beside"},
	}
)

// checkAttacks fails for every attempt of rep that got through, and for
// every positive control that did not work, in one message grouped so a
// failure on an unconfined server reads at a glance.
func (g *gate) checkAttacks(t *testing.T, rep attackReport, plan attackPlan) {
	t.Helper()
	if rep.Error != "" {
		t.Errorf("%s: the attacker stopped: %s", rep.file, rep.Error)
	}
	if len(rep.Attempts) == 0 {
		t.Errorf("%s: no attempts", rep.file)
		return
	}
	var bad []string
	byOp := map[string]int{}
	worked := map[string]attackAttempt{}
	info := map[string][2]int{} // informational op → worked, failed
	for _, a := range rep.Attempts {
		switch {
		case a.OK && slices.Contains(attackMustFail[a.Kind], a.Op):
			byOp[a.Op]++
			bad = append(bad, fmt.Sprintf("%s %s via %s worked (%s)%s", a.Op, g.short(a.Target), a.Via, g.short(a.Path), dataNote(a)))
		case a.Via == "direct" && slices.Contains(attackMustWork[a.Kind], a.Op):
			if a.OK {
				worked[a.Kind+" "+a.Op+" "+a.Target] = a
			} else {
				bad = append(bad, fmt.Sprintf("the user's %s of %s failed: %s", a.Op, g.short(a.Target), a.Err))
			}
		case a.Op == "kill0" || a.Op == "chmod-same-mode" || a.Op == "list-fds":
			n := info[a.Op]
			if a.OK {
				n[0]++
			} else {
				n[1]++
			}
			info[a.Op] = n
		}
		if a.Kind == "control" && !a.OK {
			bad = append(bad, fmt.Sprintf("the control %s in %s failed: %s", a.Op, g.short(a.Target), a.Err))
		}
	}
	for _, tg := range plan.Targets {
		for _, op := range attackMustWork[tg.Kind] {
			a, ok := worked[tg.Kind+" "+op+" "+tg.Path]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("the user's %s of %s did not work (or was not tried)", op, g.short(tg.Path)))
			case op == "exec" && !strings.Contains(a.Out, map[string]string{"--version": "attacker 1.0", "version": "wraptool "}[tg.ExecArg]):
				bad = append(bad, fmt.Sprintf("running %s %s printed %q", tg.Path, tg.ExecArg, a.Out))
			}
		}
	}
	if a, ok := worked["free read "+g.sshKey]; ok {
		if want, _ := os.ReadFile(g.sshKey); a.Data != hex.EncodeToString(want[:min(len(want), 64)]) {
			t.Errorf("reading %s got %s, want its bytes", g.sshKey, a.Data)
		}
	}
	t.Logf("%s (%s, pid %d, parent %d, wraptool %d): %d attempts; kill(parent, 0), chmod to the same mode, listing /proc/<parent>/fd (worked, failed): %v",
		filepath.Base(rep.file), rep.Mode, rep.PID, rep.PPID, rep.WraptoolPID, len(rep.Attempts), info)
	if len(bad) > 0 {
		const show = 25
		more := ""
		if len(bad) > show {
			more = fmt.Sprintf("\n… and %d more", len(bad)-show)
			bad = bad[:show]
		}
		t.Errorf("%s: the %s attacker got through %d times (by attempt: %v):\n%s%s", filepath.Base(rep.file), rep.Mode, sum(byOp), byOp, strings.Join(bad, "\n"), more)
	}
}

// short writes paths under the gate's home as ~/….
func (g *gate) short(s string) string {
	return strings.ReplaceAll(s, g.home, "~")
}

func dataNote(a attackAttempt) string {
	switch {
	case a.Data != "":
		return fmt.Sprintf(", read %d bytes", len(a.Data)/2)
	case a.Err != "":
		return "; " + strings.TrimPrefix(a.Err, "; ")
	}
	return ""
}

// reportOutputs are the reports' texts, for checkNoSecrets.
func reportOutputs(reps []attackReport) map[string]string {
	out := map[string]string{}
	for _, r := range reps {
		out["the report "+filepath.Base(r.file)] = r.raw
	}
	return out
}

// A wrapped tool tries every way in: nothing of the gate is reachable, its
// bytes are unchanged, no output carries a secret, the binaries wraptool
// starts are unchanged but still run, and the user's own files work.
func TestConfinedToolCannotReachTheGate(t *testing.T) {
	slow(t, "a confined tool against wraptool's files")
	t.Parallel()
	requireLandlock(t)
	g := newGate(t, true)
	s := g.start(t, g.config(t, "", g.attackerTool("quiet"), ""))
	c := s.Connect(t, "/mcp")
	plan := g.writePlan(t)
	before := g.fingerprint(t)

	started := time.Now()
	res := c.Call(t, "attacker_run", map[string]any{"cwd": g.work})
	text := toolsettest.ResultText(t, res)
	t.Logf("the attack call took %v", time.Since(started).Round(time.Millisecond))
	if res.IsError {
		t.Errorf("the attacker's call failed: %.2000s", text)
	}
	reps := waitReports(t, s, g.reportDir, "tool", 1)
	for _, r := range reps {
		if r.PPID != s.PID() && r.WraptoolPID != s.PID() {
			t.Errorf("%s: parent %d, wraptool %d; want the server %d among them", r.file, r.PPID, r.WraptoolPID, s.PID())
		}
		g.checkAttacks(t, r, plan)
	}
	outputs := reportOutputs(reps)
	outputs["the call's result"] = text
	g.checkNoSecrets(t, outputs)
	g.checkUnchanged(t, before)
}

// A folder in the call's cwd keeps turning into a symlink to the config's
// folder and back while another call writes through it: the writes that
// find the symlink are refused, the config is unchanged.
func TestConfinedFolderSwapRace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the race runs for seconds")
	}
	requireLandlock(t)
	g := newGate(t, true)
	s := g.start(t, g.config(t, "", g.attackerTool("quiet"), ""))
	swapper, writer := s.Connect(t, "/mcp"), s.Connect(t, "/mcp")
	g.writePlan(t)
	raceDir := filepath.Join(g.work, "race")
	if err := os.Mkdir(raceDir, 0o700); err != nil {
		t.Fatal(err)
	}
	before := g.fingerprint(t)

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	results := make([]*mcp.CallToolResult, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, call := range []struct {
		c    *mcpClient
		mode string
	}{{swapper, "race-swap"}, {writer, "race-write"}} {
		wg.Go(func() {
			results[i], errs[i] = call.c.CallTool(ctx, &mcp.CallToolParams{Name: "attacker_run",
				Arguments: map[string]any{"args": []any{call.mode}, "cwd": raceDir}})
		})
	}
	wg.Wait()
	outputs := map[string]string{}
	for i, mode := range []string{"race-swap", "race-write"} {
		if errs[i] != nil {
			t.Fatalf("%s: %v", mode, errs[i])
		}
		outputs["the "+mode+" result"] = toolsettest.ResultText(t, results[i])
		if results[i].IsError {
			t.Errorf("%s failed: %s", mode, outputs["the "+mode+" result"])
		}
	}
	swaps, writes := reportsOf(t, g.reportDir, "race-swap"), reportsOf(t, g.reportDir, "race-write")
	if len(swaps) != 1 || len(writes) != 1 || swaps[0].Race == nil || writes[0].Race == nil {
		t.Fatalf("want one report of each half, got %d swapper and %d writer reports", len(swaps), len(writes))
	}
	sw, wr := swaps[0].Race, writes[0].Race
	t.Logf("swaps %d (errors %d); writes: %d in the real folder, %d refused, %d mid-swap, %d through the symlink into the config (last error %q)",
		sw.Swaps, sw.SwapErrors, wr.Writes, wr.Denied, wr.Missed, wr.Hits, wr.LastErr)
	if wr.Hits > 0 {
		t.Errorf("a write through the swapped folder reached the config %d times", wr.Hits)
	}
	if wr.Hits == 0 && (sw.Swaps == 0 || wr.Writes == 0 || wr.Denied == 0) {
		t.Errorf("it did not race: %d swaps, %d writes in the real folder, %d refused through the symlink; want each above zero", sw.Swaps, wr.Writes, wr.Denied)
	}
	outputs["the swapper's report"], outputs["the writer's report"] = swaps[0].raw, writes[0].raw
	g.checkNoSecrets(t, outputs)
	g.checkUnchanged(t, before)
}

// The same attacks from every other role a process wraptool starts can
// have: an introspection help run (at start-up, before anything is
// served), an on_request hook (for a filed request) and an upstream MCP
// server (attacking before it serves).
func TestConfinedHelpHookAndUpstreamCannotReachTheGate(t *testing.T) {
	slow(t, "confinement of help runs, hooks and upstreams")
	t.Parallel()
	requireLandlock(t)
	for _, tc := range []struct {
		name, mode string
		// setup returns the config's mcp extra, tools and servers.
		setup func(g *gate) (mcpExtra, tools, servers string)
		// trigger makes the role run, once the server serves.
		trigger func(t *testing.T, s *server, c *mcpClient)
		reports int
	}{
		{
			name: "an introspection help run", mode: "introspection",
			setup:   func(g *gate) (string, string, string) { return "", g.attackerTool("attack"), "" },
			trigger: func(*testing.T, *server, *mcpClient) {},
			// `attacker --help`, then `attacker run --help`: serving waits
			// for both, so every report is there once it serves.
			reports: 1,
		},
		{
			name: "an on_request hook", mode: "hook",
			setup: func(g *gate) (string, string, string) {
				return `  on_request: ["` + g.toolBin + `", "hook", "` + g.planPath + `", "{id}"]` + "\n", g.attackerTool("quiet"), ""
			},
			trigger: func(t *testing.T, s *server, c *mcpClient) {
				request(t, c, askFor("attacker", []string{"run"}, []string{"--force"}, "let the hook run", ""))
			},
			reports: 1,
		},
		{
			name: "an upstream MCP server", mode: "upstream",
			setup: func(g *gate) (string, string, string) {
				// A quiet attacker tool as well, so the config names the
				// env and overrides files the plan attacks: a file no
				// config names is no file of wraptool's.
				return "", g.attackerTool("quiet"), `  up:
    command: ` + g.toolBin + `
    env: {ATTACK_MODE: mcp, ATTACK_PLAN: "` + g.planPath + `"}
    allow: [{tool: noop}]
`
			},
			trigger: func(*testing.T, *server, *mcpClient) {},
			reports: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGate(t, true)
			// These roles run before the test could write a plan later:
			// the cache's entries are not named, its folders are.
			plan := g.writePlan(t)
			mcpExtra, tools, servers := tc.setup(g)
			configtest.WriteFile(t, g.configPath, g.config(t, mcpExtra, tools, servers), 0o600)
			before := g.fingerprint(t)
			s := g.start(t, "")
			c := s.Connect(t, "/mcp")
			tc.trigger(t, s, c)
			reps := waitReports(t, s, g.reportDir, tc.mode, tc.reports)
			if tc.mode == "upstream" {
				waitTools(t, s, c, []string{"attacker_run", "up_noop"})
			}
			for _, r := range reps {
				g.checkAttacks(t, r, plan)
			}
			g.checkNoSecrets(t, reportOutputs(reps))
			g.checkUnchanged(t, before)
		})
	}
}

// healthz returns the lines of GET /healthz.
func healthz(t *testing.T, addr string) (int, []string) {
	t.Helper()
	client := &http.Client{Timeout: eventTimeout}
	resp, err := client.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.Split(strings.TrimRight(string(body), "\n"), "\n")
}

// mcp.confinement: required (the default) refuses to serve where the
// kernel cannot confine, naming the opt-out; off serves with a warning.
// WRAPTOOL_TEST_NO_LANDLOCK makes wraptool see a kernel without Landlock.
func TestConfinementSettingAndAKernelWithout(t *testing.T) {
	slow(t, "mcp.confinement on a kernel without Landlock")
	t.Parallel()
	const cannot, optOut, offWarning = "cannot confine the processes wraptool starts", "mcp.confinement: off", `msg="confinement is off`
	for _, tc := range []struct {
		name   string
		off    bool
		kernel string // WRAPTOOL_TEST_NO_LANDLOCK, "" for the real one
		serves bool
	}{
		{name: "required on this kernel serves confined", serves: true},
		{name: "off serves with a warning", off: true, serves: true},
		{name: "required without Landlock (ENOSYS) exits 1 before listening", kernel: "enosys"},
		{name: "required without Landlock (EOPNOTSUPP) exits 1 before listening", kernel: "eopnotsupp"},
		{name: "off without Landlock serves with a warning", off: true, kernel: "enosys", serves: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.kernel == "" && !tc.off {
				requireLandlock(t)
			}
			dir := t.TempDir()
			cfg := serverConfig(t, dir, `  fake:
    binary: $FAKECLI
    allow:
      - subcommand: [status]
`)
			if tc.off {
				cfg = strings.Replace(cfg, "mcp:\n", "mcp:\n  confinement: off\n", 1)
			}
			path := filepath.Join(dir, "config.yaml")
			configtest.WriteFile(t, path, cfg, 0o600)
			env := []string{"HOME=" + filepath.Join(dir, "home"), "PATH=" + os.Getenv("PATH")}
			if tc.kernel != "" {
				env = append(env, "WRAPTOOL_TEST_NO_LANDLOCK="+tc.kernel)
			}

			_, stderr, code := runWraptool(t, env, "config", "validate", path)
			if tc.serves && code != 0 {
				t.Errorf("config validate: exit %d, want 0:\n%s", code, stderr)
			}
			if !tc.serves && (code != 1 || !strings.Contains(stderr, cannot)) {
				t.Errorf("config validate: exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr, cannot)
			}

			_, serveErr, exited := startWraptool(t, env, "--config", path, "--log-level", "debug", "serve")
			log := serveErr.String()
			select {
			case <-exited:
				if tc.serves {
					t.Fatalf("serve exited, want it to serve:\n%s", log)
				}
				_, stderr, code := runWraptool(t, env, "--config", path, "serve")
				if code != 1 || !strings.Contains(stderr, cannot) || !strings.Contains(stderr, optOut) || strings.Contains(stderr, `msg="serving MCP"`) {
					t.Errorf("serve: exit %d, stderr:\n%s\nwant exit 1 before listening, naming %q and the opt-out %q", code, stderr, cannot, optOut)
				}
				return
			default:
			}
			if !tc.serves {
				t.Fatalf("serve is serving, want exit 1 before listening with %q and %q:\n%s", cannot, optOut, log)
			}
			warned := logLineWith(log, "level=WARN", offWarning) != ""
			if warned != tc.off {
				t.Errorf("a warning starting %q logged: %v, want %v:\n%s", strings.TrimPrefix(offWarning, `msg="`), warned, tc.off, log)
			}
			addr := listenAddress(t, path)
			status, lines := healthz(t, addr)
			want := "confinement: landlock"
			if tc.off {
				want = "confinement: off"
			}
			if status != 200 || lines[0] != "ok" || !slices.ContainsFunc(lines[1:], func(l string) bool { return strings.HasPrefix(l, want) }) {
				t.Errorf("/healthz: %d %q, want 200, first line ok and a line starting %q", status, lines, want)
			}
			t.Logf("/healthz: %q", lines)
		})
	}
}

// wraptool is not dumpable: another process of its user, which wraptool
// did not start, cannot open its environ or mem; nor can a child it starts.
// Root passes that check, so the server and the reader run as nobody.
func TestWraptoolIsNotDumpable(t *testing.T) {
	slow(t, "wraptool not being dumpable")
	t.Parallel()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI runs as root: this test needs it to start wraptool and the reader as another user")
		}
		t.Skip("needs root, to start wraptool and the reader as another user (root passes the dumpable check)")
	}
	const uid, gid = 65534, 65534
	cred := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	root := shortTempDir(t)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "bin")
	for src, dst := range map[string]string{wraptoolBin: filepath.Join(bin, "wraptool"), attackerBinary(t): filepath.Join(bin, "attacker")} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		configtest.WriteFile(t, dst, string(data), 0o755)
	}
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "srv")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := serverConfig(t, dir, `  attacker:
    binary: `+filepath.Join(bin, "attacker")+`
    allow:
      - subcommand: [procread]
`)
	path := filepath.Join(dir, "config.yaml")
	configtest.WriteFile(t, path, cfg, 0o600)
	for _, p := range []string{dir, home, path} {
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
	}

	secret := "wraptool-env-secret-" + randomHex(t, 8)
	cmd := exec.Command(filepath.Join(bin, "wraptool"), "--config", path, "--log-level", "debug", "serve")
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"WRAPTOOL_TEST_SECRET=" + secret}
	cmd.SysProcAttr = cred
	s := &server{Dir: dir, ConfigPath: path, cmd: cmd, stderr: &logBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exitErr = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() { s.stop(t) })
	waittest.Until(t, startTimeout, func() error {
		select {
		case <-s.exited:
			t.Fatalf("wraptool exited during start-up (%v):\n%s", s.exitErr, s.Log())
		default:
		}
		if log := s.Log(); !strings.Contains(log, `msg="serving MCP"`) {
			return fmt.Errorf("wraptool serving as uid 65534:\n%s", log)
		}
		return nil
	})
	s.URL = "http://" + s.stderr.find(`msg="serving MCP"`, "address=")
	token, err := os.ReadFile(filepath.Join(dir, "mcp-token"))
	if err != nil {
		t.Fatal(err)
	}
	s.Token = strings.TrimSpace(string(token))
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID())); err != nil || !strings.Contains(string(status), "\nUid:\t65534\t") {
		t.Fatalf("wraptool does not run as uid 65534 (%v):\n%s", err, status)
	}

	check := func(who, out string) {
		t.Helper()
		var attempts []attackAttempt
		if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &attempts); err != nil || len(attempts) != 2 {
			t.Fatalf("%s: output %q (%v), want two attempts", who, out, err)
		}
		for _, a := range attempts {
			if a.OK {
				t.Errorf("%s opened %s", who, a.Target)
			} else {
				t.Logf("%s: %s: %s", who, a.Target, a.Err)
			}
		}
		if strings.Contains(out, secret) || strings.Contains(out, hex.EncodeToString([]byte(secret))) {
			t.Errorf("%s read wraptool's environment", who)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	reader := exec.CommandContext(ctx, filepath.Join(bin, "attacker"), "procread", strconv.Itoa(s.PID()))
	reader.Env = []string{"PATH=/usr/bin:/bin"}
	reader.SysProcAttr = cred
	out, err := reader.Output()
	if err != nil {
		t.Fatalf("the reader: %v", err)
	}
	check("a process of the same user", string(out))

	c := s.Connect(t, "/mcp")
	res := c.Call(t, "attacker_procread", nil)
	if res.IsError {
		t.Fatalf("the child reader's call: %s", toolsettest.ResultText(t, res))
	}
	check("a child wraptool started", toolsettest.ResultText(t, res))
}
