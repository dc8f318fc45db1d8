package edit

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/configtest"
)

// FuzzApply checks ApplyRequest's promises on any config and request: a
// refused apply leaves the file byte for byte as it was; an accepted one
// writes a config that parses, holds a rule for exactly the requested
// subcommand that allows every requested flag, and leaves every other rule
// and setting as it was; one that adds nothing writes nothing.
func FuzzApply(f *testing.F) {
	for _, tc := range applyGolden {
		in, err := os.ReadFile(filepath.Join("testdata/apply", tc.name+".in.yaml"))
		if err != nil {
			f.Fatal(err)
		}
		for _, r := range tc.reqs {
			f.Add(in, r.tool, strings.Join(r.sub, " "), strings.Join(r.flags, " "))
		}
	}
	f.Add([]byte(configtest.RefusalConfig), "git", "commit", "-m")
	f.Add([]byte(configtest.RefusalConfig), "git", "remote add x", "")
	f.Add([]byte(crashConfig), "git", "status", "--short -s")
	dir := configtest.ApplyFixture(f)
	o := applyOptions(dir)
	cfg := filepath.Join(dir, "config.yaml")
	f.Fuzz(func(t *testing.T, data []byte, tool, subs, flagList string) {
		data = bytes.ReplaceAll(data, []byte("$DIR"), []byte(dir))
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sub, flags := strings.Fields(subs), strings.Fields(flagList)
		a, err := ApplyRequest(cfg, tool, sub, flags, o)
		got, rerr := os.ReadFile(cfg)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil || !a.Changed() {
			if !bytes.Equal(got, data) {
				t.Fatalf("apply (%v, %v) changed the file:\n%s", a, err, lineDiff(string(got), string(data)))
			}
			return
		}
		before, err := config.Parse(cfg, data, o)
		if err != nil {
			t.Fatalf("apply accepted a config that does not parse: %v", err)
		}
		after, err := config.Parse(cfg, got, o)
		if err != nil {
			t.Fatalf("the applied config does not parse: %v\n%s", err, got)
		}
		bt, at := before.Tools[tool], after.Tools[tool]
		if len(at.Allow) != len(bt.Allow)+boolInt(a.NewRule) {
			t.Fatalf("allow rules %d → %d for %v", len(bt.Allow), len(at.Allow), a)
		}
		for i, r := range at.Allow {
			if !slices.Equal(r.Subcommand, sub) {
				if !reflect.DeepEqual(unseeded(r), unseeded(bt.Allow[i])) {
					t.Fatalf("rule %d changed: %+v → %+v", i, bt.Allow[i], r)
				}
				continue
			}
			for _, fl := range flags {
				if !slices.Contains(r.Flags, fl) {
					t.Fatalf("the merged rule lacks %s: %+v", fl, r)
				}
			}
		}
		bt.Allow, at.Allow = nil, nil
		if !reflect.DeepEqual(before.Tools, after.Tools) || !reflect.DeepEqual(before.MCP, after.MCP) ||
			!reflect.DeepEqual(before.MCPServers, after.MCPServers) {
			t.Fatalf("settings outside the rule changed:\n%s", lineDiff(string(got), string(data)))
		}
	})
}

// unseeded is r as written: its own flags, without the seeded help flags.
func unseeded(r *policy.AllowRule) *policy.AllowRule {
	c := *r
	c.Flags = r.Written()
	c.Seeded = nil
	return &c
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
