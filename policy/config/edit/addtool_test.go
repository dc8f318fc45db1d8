package edit

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
)

// TestAddToolWithPreset: config add with a preset writes the preset's
// rules live and says how many, keeps the file's mode and every other
// byte, and the result loads with exactly those rules; a tool that exists
// leaves the file untouched.
func TestAddToolWithPreset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	head := "# mine\nmcp:\n  listen: 127.0.0.1:8717\ntools:\n"
	if err := os.WriteFile(path, []byte(head), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := config.LookupPreset("kubectl", "read")
	if err != nil {
		t.Fatal(err)
	}
	o := applyOptions(dir)
	nt := config.NewTool{Name: "kubectl", Binary: "/usr/bin/true", Preset: &p}
	n, err := AddTool(path, nt, o)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(head)) {
		t.Errorf("the original bytes are not kept:\n%s", data)
	}
	if !bytes.Contains(data, []byte(`# Preset "read" for kubectl, reviewed by wraptool: `)) {
		t.Errorf("no comment naming the preset:\n%s", data)
	}
	c, err := config.Parse(path, data, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(c.Tools["kubectl"].Allow); n != got || n == 0 {
		t.Errorf("AddTool said %d rules, the file holds %d", n, got)
	}
	if len(c.Tools["kubectl"].Deny) == 0 {
		t.Errorf("no deny rules written")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	if _, err := AddTool(path, nt, o); !errors.Is(err, config.ErrToolExists) {
		t.Errorf("adding it again: %v, want ErrToolExists", err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, data) {
		t.Errorf("a refused add changed the file")
	}
}
