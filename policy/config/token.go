package config

import (
	"fmt"
	"os"
	"strings"
)

// ReadToken returns the token in path with surrounding whitespace removed,
// so a trailing newline from an editor does not become part of the secret.
func ReadToken(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s: %w", path, ErrEmptyToken)
	}
	return tok, nil
}
