package edit

import (
	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
)

// PreviewApply computes what ApplyRequest would merge without writing
// anything, so the operator can see the effect before approving: the allow
// rule as it would stand (its written flags; the help flags a load seeds are
// not included), and what would change. It refuses exactly what
// ApplyRequest refuses, with the same errors.
func PreviewApply(path string, tool string, sub, flags []string, o *config.Options) (*policy.AllowRule, config.Applied, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return nil, config.Applied{}, err
	}
	m, err := config.MergeRequest(path, data, tool, sub, flags, o)
	if err != nil {
		return nil, config.Applied{}, err
	}
	return m.Rule, m.Applied, nil
}

// ApplyPreview is what PlanApply computes: the file's bytes now and as the
// apply would write them, for a review page's diff.
type ApplyPreview struct {
	// Before and After are the config's bytes; equal when nothing changes.
	Before, After []byte
	// Rule is the allow rule as it would stand, help flags not seeded.
	Rule *policy.AllowRule
	// Applied says what would change.
	Applied config.Applied
}

// PlanApply is PreviewApply with the exact bytes: what ApplyRequest would
// write, computed the same way, writing nothing. The admin UI shows it as a
// unified diff before the operator confirms.
func PlanApply(path string, tool string, sub, flags []string, o *config.Options) (ApplyPreview, error) {
	data, err := config.ReadFile(path)
	if err != nil {
		return ApplyPreview{}, err
	}
	m, err := config.MergeRequest(path, data, tool, sub, flags, o)
	if err != nil {
		return ApplyPreview{}, err
	}
	return ApplyPreview{Before: data, After: m.Out, Rule: m.Rule, Applied: m.Applied}, nil
}

// ApplyRequest merges an approved capability request into the config file
// at path and reports what it merged. The tool must already be in the
// config and no deny rule may cover the subcommand; an allow rule with
// exactly that subcommand gains the new flags and keeps its constraints,
// otherwise a new rule is appended with arg_constraints {positional_max: 0}.
//
// The change is spliced into the file's own text, so every byte outside the
// edited rule stays as written (comments, order, quoting, line endings); the
// result must pass the same validation as any config, and must parse back to
// exactly the requested change, before it is written. The write is atomic
// (a temporary file in the same folder, fsynced, renamed over the config,
// keeping its mode); a refused or failed apply leaves the file as it was.
//
// Concurrent appliers (the CLI, the admin UI) are serialized by an exclusive
// flock on the config file itself, taken before reading and held until the
// rename, so neither loses the other's edit; a writer that takes no lock (an
// editor) is caught by re-reading the file just before the rename and
// refusing with config.ErrChangedMeanwhile if it differs. A request the rule
// already satisfies writes nothing.
func ApplyRequest(path string, tool string, sub, flags []string, o *config.Options) (config.Applied, error) {
	return apply(path, tool, sub, flags, o, nil)
}

// apply is ApplyRequest; beforeCommit, when set (tests), runs after the new
// file is written and before the final check that the config is unchanged.
func apply(path string, tool string, sub, flags []string, o *config.Options, beforeCommit func()) (config.Applied, error) {
	var applied config.Applied
	err := editConfig(path, func(data []byte) ([]byte, error) {
		m, err := config.MergeRequest(path, data, tool, sub, flags, o)
		if err != nil {
			return nil, err
		}
		applied = m.Applied
		if !m.Applied.Changed() {
			return nil, nil
		}
		return m.Out, nil
	}, beforeCommit)
	if err != nil {
		return config.Applied{}, err
	}
	return applied, nil
}
