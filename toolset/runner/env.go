package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// FallbackPath is the PATH given to children when the server has none, or
// none that survives cleaning.
const FallbackPath = "/usr/bin:/bin"

// Environ builds a child's environment: PATH with the binary's own folder
// first (so a tool finds its co-located helpers) followed by the server's PATH
// (or FallbackPath), HOME copied from the server, LANG=C.UTF-8, then the
// env_files variables and the inline env on top. Nothing else of the server's
// environment is passed on. getenv reads the server's environment. The result
// is sorted, so equal inputs give equal environments.
//
// Every PATH, the server's or one set in env_files or env, loses its empty
// and relative entries: an empty entry means the current directory, which
// the client chooses with cwd, so a tool looking up a helper (git's
// git-remote-*) would run the client's file. A PATH left with nothing
// becomes FallbackPath.
func Environ(binary string, getenv func(string) string, fileEnv, env map[string]string) []string {
	vars := map[string]string{}
	path := cleanPath(getenv("PATH"))
	if dir := filepath.Dir(binary); filepath.IsAbs(dir) {
		path = dir + string(filepath.ListSeparator) + path
	}
	vars["PATH"] = path
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
	vars["PATH"] = cleanPath(vars["PATH"])
	out := make([]string, 0, len(vars))
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// cleanPath keeps a PATH's absolute entries, in order; FallbackPath when
// none is left.
func cleanPath(list string) string {
	var keep []string
	for _, dir := range filepath.SplitList(list) {
		if filepath.IsAbs(dir) {
			keep = append(keep, dir)
		}
	}
	if len(keep) == 0 {
		return FallbackPath
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// LookPath finds file the way exec does, but in the PATH of env (a child's
// environment as Environ builds it) rather than the server's: an upstream
// server's command named without a slash is looked up where the child
// itself would look. A name with a slash is returned as it is.
func LookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	path := FallbackPath
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		candidate := filepath.Join(dir, file)
		if fi, err := os.Stat(candidate); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return candidate, nil
		}
	}
	return "", fmt.Errorf("%q not found in PATH %s", file, path)
}
