package config

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/wraptool/wraptool/policy/config/internal/safefile"
)

// ensureToken creates the token file at path when none exists: 32 random
// bytes, hex-encoded, mode 0600, in a folder created with mode 0700. It never
// replaces an existing file, not even one that appears while it works. It
// reports whether it wrote the file.
func ensureToken(path string) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("create token file: %w", err)
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, fmt.Errorf("create token file: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("create token file: %w", err)
	}
	created, err := safefile.CreateExclusive(path, []byte(hex.EncodeToString(b[:])+"\n"))
	if err != nil {
		return false, fmt.Errorf("create token file %s: %w", path, err)
	}
	return created, nil
}

// TokenFiles lists the token files the config names: MCP first, then
// admin, then the elicitation clients' in order.
func (c *Config) TokenFiles() []string {
	var files []string
	for _, f := range []string{c.MCP.AuthTokenFile, c.Admin.AuthTokenFile} {
		if f != "" {
			files = append(files, f)
		}
	}
	for _, ec := range c.MCP.ElicitClients {
		if ec != nil && ec.TokenFile != "" {
			files = append(files, ec.TokenFile)
		}
	}
	return files
}
