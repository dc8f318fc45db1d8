package config

import (
	"errors"
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

// ReadTokenFile reads a token file outside a config load (`connect
// --token-file`, and the token connect sends), with the checks a load makes
// of every token file: owned by you or root, neither readable
// nor writable by group or others, in folders they may not write (unless
// sticky), a regular file of at most 64 KiB opened without blocking. Each
// refusal names the file and the command that fixes it. The token is the
// content without surrounding whitespace.
func ReadTokenFile(path string) (string, error) {
	if msg := checkFile(path, secret); msg != "" {
		return "", errors.New(msg)
	}
	data, err := readRegular(path, maxTokenBytes)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", fmt.Errorf("%s: %w", path, ErrEmptyToken)
	}
	return tok, nil
}
