package actors

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/wraptool/wraptool/messages"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/toolset"
)

// Snapshot is the server's state after one successful load. It is immutable
// and shared by pointer: a tool call keeps the snapshot it started with.
type Snapshot struct {
	toolset.State
	Config *config.Config
	// MCPToken is the bearer token MCP clients must send; "" for none.
	MCPToken string
	// Hash identifies the config bytes and token files it came from.
	Hash string
	// ConfigPath is the absolute path of the config file.
	ConfigPath string
}

// NewSnapshot builds the snapshot for a load. getenv reads the server's
// environment, for the children's PATH and HOME.
//
// The snapshot's State carries no Slots and no Reaper: those live as long as
// the server, and whoever publishes the snapshot sets them (see
// PolicyHolder).
func NewSnapshot(m messages.ConfigLoaded, configPath string, getenv func(string) string) *Snapshot {
	protected := append([]string{absPath(configPath)}, m.Config.OwnFiles()...)
	rt := make(map[string]toolset.Runtime, len(m.Config.Tools))
	for name, t := range m.Config.Tools {
		rt[name] = toolset.Runtime{
			WorkingDir: t.WorkingDir,
			Env:        toolset.Environ(t.Binary, getenv, t.FileEnv, t.Env),
			Timeout:    t.Timeout,
			Roots:      m.Config.MCP.AllowedCwdRoots,
			Protected:  protected,
			Home:       getenv("HOME"),
		}
	}
	return &Snapshot{
		State:      toolset.State{Policy: m.Policy, Runtimes: rt},
		Config:     m.Config,
		MCPToken:   m.MCPToken,
		Hash:       m.Hash,
		ConfigPath: configPath,
	}
}

// WatchPaths are the files whose changes trigger a reload: the config and
// the token files it names.
func (s *Snapshot) WatchPaths() []string {
	return append([]string{s.ConfigPath}, s.Config.TokenFiles()...)
}

// LoadConfig reads, validates and compiles the config at path, and reads
// the token files it names. It is the whole of a reload that can fail; the
// result is ready to swap in.
func LoadConfig(path string, opts *config.Options) (messages.ConfigLoaded, error) {
	data, c, err := ReadConfig(path, opts)
	if err != nil {
		return messages.ConfigLoaded{}, err
	}
	return Compile(c, data)
}

// ReadConfig reads and parses the config, returning the bytes it parsed
// (their hash identifies the load).
func ReadConfig(path string, opts *config.Options) ([]byte, *config.Config, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, err := config.Parse(path, data, opts)
	return data, c, err
}

// Compile finishes a config parsed from data: it reads the token files,
// compiles the policy and hashes the bytes and tokens.
func Compile(c *config.Config, data []byte) (messages.ConfigLoaded, error) {
	h := sha256.New()
	h.Write(data)
	var mcpToken string
	for _, f := range c.TokenFiles() {
		tok, err := config.ReadToken(f)
		if err != nil {
			return messages.ConfigLoaded{}, fmt.Errorf("%s: token file: %w", c.File, err)
		}
		if f == c.MCP.AuthTokenFile {
			mcpToken = tok
		}
		fmt.Fprintf(h, "\x00%s\x00%s", f, tok)
	}
	p, err := c.Policy(nil)
	if err != nil {
		return messages.ConfigLoaded{}, fmt.Errorf("%s: %w", c.File, err)
	}
	return messages.ConfigLoaded{Config: c, Policy: p, MCPToken: mcpToken, Hash: hex.EncodeToString(h.Sum(nil))}, nil
}

// absPath makes path absolute for comparisons with watcher events.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return filepath.Clean(path)
}
