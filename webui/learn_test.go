package webui

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/wraptool/wraptool/policy/config"
)

// learner stands in for the policy holder's LearnHelps: it records what it
// is asked, and for "git log" puts that subcommand's help into the
// source's State, as the holder publishes a snapshot that knows it. With
// still set it answers as a wait that ended first.
type learner struct {
	src   *fakeSource
	still bool
	mu    sync.Mutex
	asked []string // "tool sub… flags…" per spec
}

func (l *learner) learn(ctx context.Context, specs []config.GrantSpec) error {
	l.mu.Lock()
	for _, s := range specs {
		l.asked = append(l.asked, strings.Join(append(append([]string{s.Tool}, s.Subcommand...), s.Flags...), " "))
	}
	l.mu.Unlock()
	if l.still {
		return context.DeadlineExceeded
	}
	l.src.mu.Lock()
	defer l.src.mu.Unlock()
	h := maps.Clone(l.src.st.Helps.(fakeHelps))
	h["git log"] = map[string]string{"--oneline": "shorthand for --pretty=oneline --abbrev-commit"}
	l.src.st.Helps = h
	return nil
}

func (l *learner) calls() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.asked)
}

// newLearningFixture is the UI fixture with l as the server's learner.
func newLearningFixture(t *testing.T, still bool) (*fixture, *learner) {
	t.Helper()
	l := &learner{still: still}
	f := newFixture(t, func(o *Options) { o.Learn = l.learn })
	l.src = f.src
	return f, l
}

// TestTheReviewPageLearnsARequestsHelp shows the review page have the
// server learn the help of a pending request's subcommand that no rule
// names before it renders, so the flag shows its help line rather than
// HELP UNKNOWN; only for a tool the config has and a subcommand no deny
// rule covers. Before, the page showed `--oneline (HELP UNKNOWN for 'git
// log')` until someone ran `requests approve` in a terminal.
func TestTheReviewPageLearnsARequestsHelp(t *testing.T) {
	t.Parallel()
	f, l := newLearningFixture(t, false)
	f.submit(t, "git", []string{"log"}, []string{"--oneline"}, "read the history")
	f.submit(t, "git", []string{"config"}, []string{"--list"}, "a denied subcommand")
	f.submit(t, "nope", []string{"x"}, []string{"--y"}, "a tool the config does not have")
	f.submit(t, "git", []string{"push"}, []string{"--tags"}, "a help already known")
	cookie, _ := f.signIn(t)
	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	if !strings.Contains(page, "shorthand for --pretty=oneline --abbrev-commit") {
		t.Errorf("the page lacks --oneline's help line:\n%s", page)
	}
	if strings.Contains(page, "HELP UNKNOWN for &#39;git log&#39;") {
		t.Errorf("the page still marks git log's flags HELP UNKNOWN:\n%s", page)
	}
	if strings.Contains(page, "still reading the help") {
		t.Errorf("the page says help is being learned, though it was")
	}
	for _, a := range l.calls() {
		if a != "git log --oneline" {
			t.Errorf("the page asked to learn %q: only git log (a tool the config has, no deny rule) needs it", a)
		}
	}
	if len(l.calls()) == 0 {
		t.Error("the page asked nothing to be learned")
	}
}

// TestTheReviewPageSaysHelpIsStillBeingLearned shows a page rendered
// before the help was learned say so, and refresh itself.
func TestTheReviewPageSaysHelpIsStillBeingLearned(t *testing.T) {
	t.Parallel()
	f, _ := newLearningFixture(t, true)
	f.submit(t, "git", []string{"log"}, []string{"--oneline"}, "read the history")
	cookie, _ := f.signIn(t)
	page := f.do(t, call{target: "/", cookie: cookie}).Body.String()
	for _, want := range []string{"still reading the help of a requested subcommand", `data-refresh="1"`,
		"--oneline</code> <strong class=\"notin\">(HELP UNKNOWN for &#39;git log&#39;)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
}

// TestTheAdminAPILearnsBeforeItDecides shows an approval through the API
// learn the subcommand's help before the unlisted-flag check, and the apply
// preview before it shows the effect: a flag git log's help lists is
// approved without unlisted_ok. Before, it was refused with 422 ("HELP
// UNKNOWN for 'git log'").
func TestTheAdminAPILearnsBeforeItDecides(t *testing.T) {
	t.Parallel()
	f, _ := newLearningFixture(t, false)
	id := f.submit(t, "git", []string{"log"}, []string{"--oneline"}, "read the history")
	if w := f.apiPost(t, id, "approve", `{}`); w.Code != 200 {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}

	g, _ := newLearningFixture(t, false)
	id = g.submit(t, "git", []string{"log"}, []string{"--oneline"}, "read the history")
	cookie, _ := g.signIn(t)
	preview := g.do(t, call{target: requestPath(id, "apply"), cookie: cookie}).Body.String()
	if !strings.Contains(preview, "shorthand for --pretty=oneline --abbrev-commit") {
		t.Errorf("the apply preview lacks --oneline's help line:\n%s", preview)
	}
}
