// Package danger is the catalog of flags and subcommands that can hand
// the operator's credentials away even when a policy allows exactly what
// it says: a flag that sends the credentials to a host the assistant
// names (psql -h, aws --endpoint-url, gh --hostname), runs a program it
// names (git -c core.sshCommand=…, --upload-pack), writes or reads a file
// it names (--output, curl --data @file), or a subcommand that prints the
// credentials themselves (gh auth token, gcloud auth print-access-token).
//
// It is data with its sources: every entry of a known CLI quotes the
// tool's own help or manual, kept under testdata and checked by a test,
// and generic name patterns cover CLIs the catalog does not know. Every
// place a decision is made reads it: config validation, config add's
// catalog comments, every approval display and check --explain. It
// depends on nothing but the standard library, so any package may.
package danger

import (
	"slices"
	"strings"
)

// Class is one way an allowed flag or subcommand can hand the
// credentials away.
type Class string

// The classes, from the gravest.
const (
	// SendsCredentials redirects where the credential goes: a host, an
	// endpoint, a config or profile that names one.
	SendsCredentials Class = "sends-credentials"
	// RunsCode runs a program or script the value names, with the
	// operator's credentials in its environment.
	RunsCode Class = "runs-code"
	// PrintsCredentials prints a token, password or key to the caller.
	PrintsCredentials Class = "prints-credentials"
	// WritesFiles writes a file the value names.
	WritesFiles Class = "writes-files"
	// ReadsFiles reads a file the value names (and may send it).
	ReadsFiles Class = "reads-files"
)

// All lists every class, in the order displays show them.
var all = []Class{SendsCredentials, RunsCode, PrintsCredentials, WritesFiles, ReadsFiles}

// All returns every class, gravest first.
func All() []Class { return slices.Clone(all) }

// Effect says, for an operator deciding, what allowing the flag or
// subcommand lets the assistant do.
func (c Class) Effect() string {
	switch c {
	case SendsCredentials:
		return "sends your credentials to the host it names"
	case RunsCode:
		return "runs a program it names, with your credentials"
	case PrintsCredentials:
		return "prints your credentials to the assistant"
	case WritesFiles:
		return "writes a file it names"
	case ReadsFiles:
		return "reads a file it names"
	}
	return string(c)
}

// Grave reports whether approving the class without a pattern asks for a
// typed confirmation: it hands the credentials, or code running with them,
// to the assistant. Writing and reading files are serious too, but the
// confinement keeps wraptool's own files out of reach and they do not
// move the credentials by themselves.
func (c Class) Grave() bool {
	return c == SendsCredentials || c == RunsCode || c == PrintsCredentials
}

// Fix says how an operator keeps the class in check, for a warning.
func (c Class) Fix() string {
	switch c {
	case SendsCredentials:
		return "constrain it with flag_constraints pattern to the hosts you mean (e.g. pattern: 'db\\.internal\\.example\\.com'), or leave it out"
	case RunsCode:
		return "leave it out, or constrain it with a pattern that names only what may run"
	case PrintsCredentials:
		return "leave it out: nothing about it can be constrained"
	case WritesFiles:
		return "constrain it with a pattern to a folder you mean, or leave it out"
	case ReadsFiles:
		return "constrain it with a pattern to the files you mean, or leave it out"
	}
	return "leave it out"
}

// Classes is a set of classes, gravest first, without repeats.
type Classes []Class

// Of builds a set from cs, ordered and without repeats.
func Of(cs ...Class) Classes {
	var out Classes
	for _, c := range all {
		if slices.Contains(cs, c) {
			out = append(out, c)
		}
	}
	return out
}

// Union is the set of both.
func (cs Classes) Union(other Classes) Classes {
	return Of(append(slices.Clone(cs), other...)...)
}

// Grave reports whether any class is.
func (cs Classes) Grave() bool { return slices.ContainsFunc(cs, Class.Grave) }

// Names lists the classes' names.
func (cs Classes) Names() []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}

// String is the names, comma-separated ("sends-credentials, reads-files").
func (cs Classes) String() string { return strings.Join(cs.Names(), ", ") }

// Effect is each class's effect, joined ("sends your credentials to the
// host it names; reads a file it names").
func (cs Classes) Effect() string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.Effect()
	}
	return strings.Join(parts, "; ")
}

// Has reports whether the set holds c.
func (cs Classes) Has(c Class) bool { return slices.Contains(cs, c) }
