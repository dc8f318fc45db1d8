package introspect

import (
	"context"
	"slices"
	"sync"

	"github.com/wraptool/wraptool/introspect/helptext"
	"github.com/wraptool/wraptool/policy"
)

// Tree is what Explore found out about one tool's commands.
type Tree struct {
	// Catalog holds every help learned, under the tool's name.
	Catalog *Catalog
	// Paths are the subcommand paths found, groups included, sorted token
	// by token ("pr" before "pr list" before "release"); "help" and names
	// outside [A-Za-z0-9][A-Za-z0-9_-]* are left out.
	Paths [][]string
	// Runs is how many help runs were started; cached helps cost none.
	Runs int
	// Unread counts the paths whose own help is not known: the budget ran
	// out before them, or the tool printed nothing parseable.
	Unread int
	// Exhausted reports that the budget stopped some help from being run.
	Exhausted bool
}

// Explore learns t's command tree depth levels deep (the root help, then
// each listed subcommand's help, then the commands each group lists, and so
// on), for `config add`'s catalog. It runs at most maxRuns help runs in all,
// under the same forms, limits, environment and caches as Learn; cached helps
// are free. t.Subcommands is ignored.
//
// The outcome does not depend on timing: each level's paths are taken in
// sorted order, and a path is started only when the budget left covers every
// form it might need, so which helps are fetched depends on the tool's
// answers alone (and on what the cache already holds). The unused part of a
// path's reservation is returned once it is done, and the next paths of the
// level start then.
func (in *Introspector) Explore(ctx context.Context, t Tool, depth, maxRuns int) Tree {
	th := &toolHelps{helps: map[string]helptext.Help{}, overrides: t.Overrides}
	tree := Tree{Catalog: &Catalog{tools: map[string]*toolHelps{t.Name: th}}}
	bin, err := statBinary(t.Binary)
	if err != nil {
		in.log.Warn("cannot introspect tool", "tool", t.Name, "binary", t.Binary, "error", err)
		return tree
	}
	cache, err := openCache(in.o.CacheDir, !in.o.CacheOnly)
	if err != nil {
		in.log.Warn("introspection cache not used", "error", err)
	}
	left := maxRuns
	var root *helptext.Help

	// learn fetches the helps of paths, level by level in sorted order,
	// within the budget.
	learn := func(paths [][]string) {
		for i := 0; i < len(paths) && ctx.Err() == nil; {
			type job struct {
				sub  []string
				cost int
			}
			var batch []job
			for ; i < len(paths); i++ {
				cost := len(forms(paths[i], root))
				if cost > left {
					break
				}
				left -= cost
				batch = append(batch, job{paths[i], cost})
			}
			if len(batch) == 0 {
				tree.Exhausted = true
				return
			}
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, j := range batch {
				wg.Go(func() {
					runs := 0
					tt := t
					tt.runs = &runs
					h, ok := in.help(ctx, cache, tt, bin, j.sub, root, false)
					mu.Lock()
					defer mu.Unlock()
					left += j.cost - runs
					tree.Runs += runs
					if ok {
						th.helps[subKey(j.sub)] = h
					}
				})
			}
			wg.Wait()
		}
	}

	learn([][]string{nil})
	if h, ok := th.helps[""]; ok {
		root = &h
	} else {
		return tree
	}
	level := children(root, nil)
	for d := 1; d <= depth && len(level) > 0; d++ {
		tree.Paths = append(tree.Paths, level...)
		if d == depth {
			break
		}
		learn(level)
		var next [][]string
		for _, p := range level {
			h, ok := th.helps[subKey(p)]
			if !ok || sameListing(h, *root) {
				// A tool that answers an unknown "sub --help" with its
				// root help would otherwise nest every command under
				// every other.
				continue
			}
			next = append(next, children(&h, p)...)
		}
		level = next
	}
	// The deepest level's own helps give its flags.
	learn(level)
	slices.SortFunc(tree.Paths, slices.Compare)
	for _, p := range tree.Paths {
		if _, ok := th.helps[subKey(p)]; !ok {
			tree.Unread++
		}
	}
	return tree
}

// children lists the commands h advertises below parent, sorted: valid
// tokens only, never help, each once.
func children(h *helptext.Help, parent []string) [][]string {
	var names []string
	for _, s := range h.Subcommands {
		if s.Name != "help" && policy.ValidToken(s.Name) && !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	out := make([][]string, len(names))
	for i, n := range names {
		out[i] = append(slices.Clone(parent), n)
	}
	return out
}

// sameListing reports whether h lists exactly root's commands, in order.
func sameListing(h, root helptext.Help) bool {
	return len(h.Subcommands) > 0 && slices.EqualFunc(h.Subcommands, root.Subcommands,
		func(a, b helptext.Subcommand) bool { return a.Name == b.Name })
}
