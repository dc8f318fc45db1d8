package toolset

import (
	"path/filepath"
	"slices"
)

// FallbackPath is the PATH given to children when the server has none.
const FallbackPath = "/usr/bin:/bin"

// Environ builds a child's environment: PATH with the binary's own folder
// first (so a tool finds its co-located helpers) followed by the server's PATH
// (or FallbackPath), HOME copied from the server, LANG=C.UTF-8, then the
// env_files variables and the inline env on top. Nothing else of the server's
// environment is passed on. getenv reads the server's environment. The result
// is sorted, so equal inputs give equal environments.
func Environ(binary string, getenv func(string) string, fileEnv, env map[string]string) []string {
	vars := map[string]string{}
	path := getenv("PATH")
	if path == "" {
		path = FallbackPath
	}
	vars["PATH"] = filepath.Dir(binary) + string(filepath.ListSeparator) + path
	if home := getenv("HOME"); home != "" {
		vars["HOME"] = home
	}
	vars["LANG"] = "C.UTF-8"
	for k, v := range fileEnv {
		vars[k] = v
	}
	for k, v := range env {
		vars[k] = v
	}
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
