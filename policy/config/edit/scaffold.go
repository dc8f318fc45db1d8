package edit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"text/template"

	"github.com/wraptool/wraptool/policy/config/internal/safefile"
)

// ScaffoldOptions adjusts Scaffold. A nil *ScaffoldOptions means defaults.
type ScaffoldOptions struct {
	// LookGit returns git's absolute path, or an error when git is not
	// installed; nil means a search of $PATH. Tests inject it so the
	// starter does not depend on the machine.
	LookGit func() (string, error)
}

func (o *ScaffoldOptions) lookGit() (string, error) {
	if o != nil && o.LookGit != nil {
		return o.LookGit()
	}
	p, err := exec.LookPath("git")
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// Scaffold writes the commented starter config to path when no file is
// there, creating missing folders with mode 0700 and the file with mode 0600.
// It never replaces an existing file, even one created concurrently: the
// file is written in full under a temporary name and then hard-linked into
// place, which fails if path exists. It reports whether it wrote the file.
func Scaffold(path string, o *ScaffoldOptions) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("scaffold config: %w", err)
	}
	gitPath, err := o.lookGit()
	if err != nil {
		gitPath = ""
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("scaffold config: %w", err)
	}
	created, err := safefile.CreateExclusive(path, Starter(gitPath))
	if err != nil {
		return false, fmt.Errorf("scaffold config: %w", err)
	}
	return created, nil
}

// StarterTokenFile is the MCP token file the starter config names.
const StarterTokenFile = "~/.config/wraptool/mcp-token"

var starter = template.Must(template.New("starter").Parse(`# wraptool configuration
#
# wraptool lets AI assistants run the commands allowed below with this
# machine's credentials, which the assistant never sees. Everything not
# allowed here is refused with a note on how to ask for it.
#
# The server reloads this file when you save it. Check an edit first with
#   wraptool config validate
# Every field is described in docs/configuration.md in wraptool's repository.

mcp:
  transport: sse
  listen: 127.0.0.1:8717
  # Clients send this token as "Authorization: Bearer <token>". wraptool
  # creates the file (mode 0600) the first time it starts.
  auth_token_file: {{.TokenFile}}
  # Confine the working directory a client may ask for (recommended: a
  # client that can write a repository's .git/config can make git run code).
  # allowed_cwd_roots:
  #   - ~/src

# The review UI for the assistant's capability requests:
# admin:
#   listen: 127.0.0.1:8718
#   auth_token_file: ~/.config/wraptool/admin-token

{{if .Git -}}
tools:
  # git pull uses your SSH key or credential helper: the assistant gets the
  # result without seeing either. Read-only git (status, log, diff) needs no
  # credentials, so it is left to the assistant itself.
  git:
    binary: {{.Git}}
    allow:
      - subcommand: [pull]
        flags: ["--ff-only"]
        flag_constraints:
          "--ff-only": { type: boolean }
        # Positional arguments reach git as they are, so name them: the
        # remote called origin (a pattern cannot tell a remote's name from
        # a folder, so it is spelled out), then a branch.
        arg_constraints:
          positional_max: 2
          patterns: ["origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"]
    deny:
      - subcommand: [config]
{{- else -}}
tools: {}
# git was not found when this file was written. To wrap it, replace the line
# above with this block, uncommented, and set binary to git's absolute path:
# tools:
#   git:
#     binary: /usr/bin/git
#     allow:
#       - subcommand: [pull]
#         flags: ["--ff-only"]
#         flag_constraints:
#           "--ff-only": { type: boolean }
#         arg_constraints:
#           positional_max: 2
#           patterns: ["origin", "[A-Za-z0-9][A-Za-z0-9._/-]*"]
#     deny:
#       - subcommand: [config]
{{- end}}
`))

// Starter returns the starter config. gitPath is git's absolute path, or ""
// when git is not installed: the git rule is then written commented out, so
// the starter always validates.
func Starter(gitPath string) []byte {
	var b bytes.Buffer
	err := starter.Execute(&b, struct{ Git, TokenFile string }{gitPath, StarterTokenFile})
	if err != nil {
		panic(fmt.Sprintf("starter template: %v", err)) // the template is fixed; a failure is a bug
	}
	return b.Bytes()
}

// Unscaffold removes the config Scaffold wrote at path, for a command that
// scaffolded it and was then refused: only while the file is still the one
// written (info, from os.Lstat just after Scaffold) and holds exactly
// starter, so an edit made meanwhile is never lost. It reports whether it
// removed the file.
func Unscaffold(path string, starter []byte, info fs.FileInfo) (bool, error) {
	now, err := os.Lstat(path)
	if err != nil || !os.SameFile(now, info) || !now.Mode().IsRegular() {
		return false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(data, starter) {
		return false, nil
	}
	if err := os.Remove(path); err != nil {
		return false, fmt.Errorf("remove the starter config: %w", err)
	}
	return true, nil
}
