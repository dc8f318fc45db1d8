package main

import (
	"testing"
)

// The stdio entry names a binary that outlives the server: the running one,
// or, for a `go run` build in a temporary folder, the one `go install`
// puts in GOBIN, else GOPATH's bin, else ~/go/bin.
func TestStdioCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		exe      string
		env      map[string]string
		want     string
		wantNote bool
	}{
		{"an installed binary is itself", "/home/op/go/bin/wraptool", map[string]string{"TMPDIR": "/tmp"}, "/home/op/go/bin/wraptool", false},
		{"a binary in /usr/local/bin", "/usr/local/bin/wraptool", nil, "/usr/local/bin/wraptool", false},
		{"go run under /tmp uses GOBIN", "/tmp/go-build1234/b001/exe/wraptool", map[string]string{"GOBIN": "/opt/bin", "HOME": "/home/op"}, "/opt/bin/wraptool", true},
		{"go run under TMPDIR uses GOPATH's first bin", "/var/tmp/x/go-build99/b001/exe/wraptool", map[string]string{"TMPDIR": "/var/tmp/x", "GOPATH": "/src/gp:/other", "HOME": "/home/op"}, "/src/gp/bin/wraptool", true},
		{"go run under GOTMPDIR falls back to ~/go/bin", "/scratch/go-build7/b001/exe/wraptool", map[string]string{"GOTMPDIR": "/scratch", "HOME": "/home/op"}, "/home/op/go/bin/wraptool", true},
		{"a go-build folder outside the temporary folders is not go run", "/home/op/go-build/wraptool", map[string]string{"TMPDIR": "/tmp", "HOME": "/home/op"}, "/home/op/go-build/wraptool", false},
		{"go run cached in ~/.cache/go-build (Go 1.24+) uses GOBIN", "/home/op/.cache/go-build/10/1020a18b3c18bcbe3014ea121c7948ace1be5a8112c7c9536fba9905d13eea19-d/wraptool", map[string]string{"GOBIN": "/opt/bin", "HOME": "/home/op"}, "/opt/bin/wraptool", true},
		{"go run cached under GOCACHE uses ~/go/bin", "/srv/gocache/10/1020a18b3c18bcbe3014ea121c7948ace1be5a8112c7c9536fba9905d13eea19-d/wraptool", map[string]string{"GOCACHE": "/srv/gocache", "HOME": "/home/op"}, "/home/op/go/bin/wraptool", true},
		{"go run cached under XDG_CACHE_HOME", "/x/cache/go-build/ab/cd/wraptool", map[string]string{"XDG_CACHE_HOME": "/x/cache", "HOME": "/home/op"}, "/home/op/go/bin/wraptool", true},
		{"a cache entry's shape is recognised when GOCACHE came from go env -w", "/elsewhere/c/ff/1020a18b3c18bcbe3014ea121c7948ace1be5a8112c7c9536fba9905d13eea19-d/wraptool", map[string]string{"HOME": "/home/op"}, "/home/op/go/bin/wraptool", true},
		{"a folder named like a cache entry but not hex is itself", "/opt/zz/1020a18b3c18bcbe3014ea121c7948ace1be5a8112c7c9536fba9905d13eea19-d/wraptool", map[string]string{"HOME": "/home/op"}, "/opt/zz/1020a18b3c18bcbe3014ea121c7948ace1be5a8112c7c9536fba9905d13eea19-d/wraptool", false},
		{"a relative GOCACHE is ignored", "/home/op/bin/wraptool", map[string]string{"GOCACHE": "bin", "HOME": "/nothome"}, "/home/op/bin/wraptool", false},
		{"a binary merely named like a temporary folder is itself", "/tmpfoo/go-build1/wraptool", map[string]string{"TMPDIR": "/tmp"}, "/tmpfoo/go-build1/wraptool", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tc.env[k] }
			got, note := stdioCommand(tc.exe, getenv)
			if got != tc.want || (note != "") != tc.wantNote {
				t.Errorf("stdioCommand(%q) = %q, note %q; want %q, note %v", tc.exe, got, note, tc.want, tc.wantNote)
			}
		})
	}
}
