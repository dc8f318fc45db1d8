package config

import (
	"fmt"
	"strings"
)

// readToken returns the token in path with surrounding whitespace removed,
// so a trailing newline from an editor does not become part of the secret.
// A load reads each token file once.
func (c *Config) readToken(path string) (string, error) {
	data, err := c.fileSet().get(path, maxTokenBytes)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s: %w", path, ErrEmptyToken)
	}
	return tok, nil
}
