package config

import (
	"fmt"
	"strings"
)

// ParseEnvFile reads KEY=VALUE lines. Values are taken literally (no quotes,
// no escapes, no expansion, no "export"), so what the operator wrote is
// exactly what the child sees. Blank lines and lines whose first non-blank
// character is '#' are skipped. Errors name the file and line but never echo
// the line: env files hold secrets.
func ParseEnvFile(name string, data []byte) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("%s:%d: malformed line: want KEY=VALUE", name, i+1)
		case !ValidEnvName(key):
			return nil, fmt.Errorf("%s:%d: malformed line: the key must match [A-Za-z_][A-Za-z0-9_]*", name, i+1)
		case strings.ContainsRune(value, 0):
			return nil, fmt.Errorf("%s:%d: the value contains a NUL byte", name, i+1)
		}
		env[key] = value
	}
	return env, nil
}

// ValidEnvName reports whether s is a portable environment variable name.
func ValidEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9' {
			continue
		}
		return false
	}
	return true
}
