package config

import (
	"context"
	"path/filepath"
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// GrantSpec is a capability a temporary grant adds to the served policy:
// what its request asks for.
type GrantSpec struct {
	// ID is the request's id, for the overlay's reports.
	ID string
	// Tool, Subcommand and Flags are the request's.
	Tool       string
	Subcommand []string
	Flags      []string
}

// Overlay is a loaded config with temporary grants merged in memory, each
// exactly as the file editor's apply would merge it into the file (the same
// merge, MergeRequest's: flags added to the rule with that subcommand, else
// a new rule with positional_max 0; the merged config validated), the file
// itself untouched.
type Overlay struct {
	// Policy is the config with every grant in force merged: the tools and
	// schemas clients see.
	Policy *policy.Policy
	// Timed is the config with the timed grants in force merged: a call
	// it allows uses a timed grant, never a once-grant.
	Timed *policy.Policy
	// Each maps every grant in force to the config with that grant alone
	// merged: which grant allows a call is decided grant by grant, so a
	// once-grant is credited (and consumed) only for what it allows.
	Each map[string]*policy.Policy
	// Dormant maps each grant not in force to why: its tool is not in the
	// config, a deny rule covers it, or the merge would not validate.
	Dormant map[string]error
}

// Overlay merges timed and once-grants into the loaded config, compiled
// with the load's help (see OverlayWith).
func (l *Loaded) Overlay(timed, once []GrantSpec) *Overlay { return l.OverlayWith(nil, timed, once) }

// OverlayWith merges timed and once-grants into the loaded config. Grants
// are merged in the order given (the server passes them oldest first); one
// that cannot be merged is Dormant and leaves the others as they are. The
// merged rules are compiled with helps (nil means the load's): what
// LearnGrants learned of the grants' subcommands, so a grant's flags are
// typed as the same rule in the file would be.
func (l *Loaded) OverlayWith(helps policy.Helps, timed, once []GrantSpec) *Overlay {
	if helps == nil {
		helps = l.Helps
	}
	o := &Overlay{Policy: l.Policy, Timed: l.Policy, Each: map[string]*policy.Policy{}, Dormant: map[string]error{}}
	if len(timed) == 0 && len(once) == 0 {
		return o
	}
	c := l.Config
	base, ok := l.configBytes()
	if !ok {
		for _, g := range append(append([]GrantSpec{}, timed...), once...) {
			o.Dormant[g.ID] = errNoConfigBytes
		}
		return o
	}
	// merge applies grants in turn to data (whose parsed config is cfg),
	// reporting each that does not merge to failed; it returns the merged
	// text and its config (cfg when nothing merged).
	merge := func(data []byte, cfg *Config, grants []GrantSpec, failed func(string, error)) ([]byte, *Config) {
		for _, g := range grants {
			m, err := plan(c.File, data, g.Tool, g.Subcommand, g.Flags, l.paths, c.files)
			if err != nil {
				failed(g.ID, err)
				continue
			}
			data, cfg = m.Out, m.config
		}
		return data, cfg
	}
	dormant := func(id string, err error) { o.Dormant[id] = err }
	ignore := func(string, error) {}
	compile := func(cfg *Config) (*policy.Policy, error) {
		if cfg == nil {
			return l.Policy, nil
		}
		unseedShortHelp(cfg, helps)
		return cfg.Policy(helps)
	}
	// Each grant alone first: what is not in force stays out of the rest.
	var timedInForce, onceInForce []GrantSpec
	for i, g := range append(append([]GrantSpec{}, timed...), once...) {
		_, cfg := merge(base.data, nil, []GrantSpec{g}, dormant)
		if _, failed := o.Dormant[g.ID]; failed {
			continue
		}
		p, err := compile(cfg)
		if err != nil {
			o.Dormant[g.ID] = err
			continue
		}
		o.Each[g.ID] = p
		if i < len(timed) {
			timedInForce = append(timedInForce, g)
		} else {
			onceInForce = append(onceInForce, g)
		}
	}
	timedData, timedCfg := merge(base.data, nil, timedInForce, ignore)
	if p, err := compile(timedCfg); err == nil {
		o.Timed = p
	}
	if _, allCfg := merge(timedData, timedCfg, onceInForce, ignore); allCfg != nil {
		if p, err := compile(allCfg); err == nil {
			o.Policy = p
		}
	} else if len(timedInForce) > 0 {
		o.Policy = o.Timed
	}
	return o
}

// LearnGrants learns, with the introspect step the load was made with,
// the help of the rules specs would merge into the config: the same runs,
// forms, limits and cache as a reload's, on the config as the grants would
// make it. It returns the load's help when nothing merges or the load did
// not introspect. Learning can take as long as introspection's bounds
// allow (5 s per run), so callers run it off any loop that must answer.
func (l *Loaded) LearnGrants(ctx context.Context, specs []GrantSpec) (policy.Helps, error) {
	return l.LearnWith(ctx, l.introspect, specs)
}

// LearnWith is LearnGrants with another introspect step: the CLI's loads
// read the cache only, and learn a request's help on demand with one that
// runs the tool.
func (l *Loaded) LearnWith(ctx context.Context, in Introspect, specs []GrantSpec) (policy.Helps, error) {
	if in == nil || len(specs) == 0 {
		return l.Helps, nil
	}
	c := l.Config
	base, ok := l.configBytes()
	if !ok {
		return l.Helps, nil
	}
	data, cfg := base.data, (*Config)(nil)
	for _, g := range specs {
		m, err := plan(c.File, data, g.Tool, g.Subcommand, g.Flags, l.paths, c.files)
		if err != nil {
			continue // it will be dormant: nothing to learn
		}
		data, cfg = m.Out, m.config
	}
	if cfg == nil {
		return l.Helps, nil
	}
	return in(ctx, cfg, false)
}

// Introspects reports whether the load learned its tools' help (it had an
// introspect step): only then is a grant's help learned before it is in
// force.
func (l *Loaded) Introspects() bool { return l.introspect != nil }

// WithHelps is l with helps in place of its help (the CLI's, after
// learning a request's subcommand on demand); the policy is not compiled
// again.
func (l *Loaded) WithHelps(helps policy.Helps) *Loaded {
	c := *l
	c.Helps = helps
	return &c
}

// HelpKnown reports whether helps knows the help of tool's subcommand sub
// (for an empty sub, the tool's own): a grant for it needs nothing learned.
func HelpKnown(helps policy.Helps, tool string, sub []string) bool {
	if helps == nil {
		return false
	}
	_, ok := helps.Subcommands(tool, sub)
	return ok
}

// HelpWanted reports whether a request for tool's subcommand sub needs its
// help learned before a person decides it, and may have it learned: base
// (the config's own policy) has the tool, no deny rule covers the
// subcommand (a denied subcommand is never run, not even for its help), and
// helps does not know its help yet (an empty sub asks the tool's own). Learning then runs only the fixed help
// forms, under introspection's bounds, on a subcommand the operator is
// about to see.
func HelpWanted(base *policy.Policy, helps policy.Helps, tool string, sub []string) bool {
	return base != nil && base.HasTool(tool) && !base.Denies(tool, sub) && !HelpKnown(helps, tool, sub)
}

// HelpKey names tool's subcommand sub for a set of helps already learned.
func HelpKey(tool string, sub []string) string {
	return tool + "\x00" + strings.Join(sub, "\x00")
}

// PreviewRule is the allow rule tool/sub/flags would stand as once merged
// into the served config (help flags not seeded): the same merge a grant
// and an apply make, on the bytes this load read, so what a person is
// asked about in a client is what approving there puts in force. It refuses
// what a grant refuses.
func (l *Loaded) PreviewRule(tool string, sub, flags []string) (*policy.AllowRule, error) {
	c := l.Config
	abs, err := filepath.Abs(c.File)
	if err != nil {
		abs = c.File
	}
	base, ok := c.fileSet().read[abs]
	if !ok || base.err != nil {
		return nil, errNoConfigBytes
	}
	m, err := plan(c.File, base.data, tool, sub, flags, l.paths, c.files)
	if err != nil {
		return nil, err
	}
	return m.Rule, nil
}

// errNoConfigBytes is why no grant merges into a Loaded that did not read
// its config from a file (built by hand).
var errNoConfigBytes = &applyError{ErrInvalidRequest, "the loaded config's bytes are not at hand"}

// PolicyHash identifies what decides a call: the bytes of the config, its
// overrides files and its env files (not its token files, which decide who
// may call, not what runs). An exact-call grant is bound to it: a change of
// any of those files voids the grant.
func (l *Loaded) PolicyHash() string {
	if l.policyHash == "" { // a Loaded built by hand
		return l.Config.fileSet().hash(absolute(l.Config.TokenFiles())...)
	}
	return l.policyHash
}

// CanonicalPath is the one spelling of a config's path that a grant records
// and a server compares (a grant applies only under the config it was
// approved under): absolute, symlinks resolved, so the CLI's
// --config spelling and the server's need not match. A path that cannot be
// resolved stays absolute.
func CanonicalPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real
	}
	return abs
}

// configBytes is the config file as the load read it, the text every merge
// of a grant starts from; false when the load kept no such bytes.
func (l *Loaded) configBytes() (fileRead, bool) {
	abs, err := filepath.Abs(l.Config.File)
	if err != nil {
		abs = l.Config.File
	}
	base, ok := l.Config.fileSet().read[abs]
	return base, ok && base.err == nil
}
