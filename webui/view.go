package webui

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/requests"
)

// Page limits: the page stays quick with a full log; the CLI and the API
// list everything.
const (
	maxPendingShown = 200
	maxHistoryShown = 100
)

// pageData is what every template gets; each page fills its part.
type pageData struct {
	Title    string
	SignedIn bool
	CSRF     string // the session's CSRF token, for every form
	Pending  int    // the header's count of pending requests
	Counted  bool   // Pending is known: show it
	Flash    *flash

	// The review page.
	Requests    []requestView
	MorePending int
	History     []requestView
	MoreHistory int
	Tools       []toolView
	NoPolicy    bool
	// Reloading says the policy shown does not yet hold an apply just
	// written; Refresh, when not 0, refreshes the page after that many
	// seconds.
	Reloading bool
	Refresh   int
	// Learning says some pending request's subcommand help is still
	// being learned: its flags show HELP UNKNOWN until the page refreshes.
	Learning bool

	// The apply preview.
	Req     *requestView
	Preview *previewView

	// A notice page (an unknown or decided request).
	Notice string
}

// requestView is one request as the page shows it: everything the
// assistant wrote in the escaped forms the terminal shows (html/template
// then escapes for HTML).
type requestView struct {
	ID         string // as in the log, for form actions (the template escapes it)
	IDText     string // requests.Token(ID)
	Age        string
	Tool       string
	Subcommand string // "push", or "<ANY SUBCOMMAND>"
	Flags      []flagView
	Rationale  string
	Enables    string
	Unlisted   bool   // some flag carries a NOT IN or HELP UNKNOWN mark: offer unlisted_ok
	AnyNote    string // why a request for no subcommand cannot be approved; "" when it can

	// Pending requests only (addDanger): what the catalog says the
	// subcommand does by itself (requests.DangerText; "" for nothing) and
	// whether that is grave; Unconfirmed lists, joined, what a grant or an
	// apply hands away with no pattern holding it (requests.Effect.
	// Unconfirmed), so the grant and apply forms ask for i-know typed (an
	// exact call's grants as well: its values are fixed, but a host or a
	// program is confirmed in words all the same).
	SubDanger   string
	SubGrave    bool
	Unconfirmed string

	// An exact-call request: a grant allows exactly this command, escaped as
	// the CLI shows it, in this directory.
	Exact   bool
	Command string
	Cwd     string
	// Tokens is the command line as the history shows it, one escaped
	// token each (the exact command, or tool, subcommand and flags), so
	// that it wraps between tokens and never inside one.
	Tokens []string

	DecideURL string
	ApplyURL  string

	// Decided requests only.
	Status    string // as in the log: the row's class
	State     string // requests.GrantStatus: "approved once, used", "approved until 18:30Z", "denied"
	DecidedAt string
	DecidedBy string
	Reason    string
	Applied   bool
}

// flagView is one requested flag with its help line and, when the help
// does not list it, its mark (requests.Mark: NOT IN or HELP UNKNOWN).
type flagView struct {
	Flag string
	Mark string
	Help string
	// Danger is what the catalog says the flag can do with the
	// credentials (requests.DangerText; "" for nothing); Grave marks a
	// class that asks for a typed confirmation, Held a value a pattern
	// holds.
	Danger string
	Grave  bool
	Held   bool
}

// toolView is one tool of the policy overview.
type toolView struct {
	Name  string
	Rules []ruleView
}

// ruleView is one exposed allow rule: its command, the flags the operator
// wrote or a grant added, and the positional limit.
type ruleView struct {
	Command string
	// Grant names the grants in force the whole rule comes from, with
	// their expiry ("grant req_… until 2026-12-02 18:30Z"); "" for a rule
	// of the config.
	Grant      string
	Flags      []ruleFlag
	Positional string
}

// ruleFlag is one flag of a rule in the overview; Grant is as ruleView's,
// for a flag a grant added to a rule of the config.
type ruleFlag struct {
	Flag  string
	Grant string
}

// previewView is "Apply to config" before it is confirmed.
type previewView struct {
	File       string // the config's path
	Error      string // why the apply is refused; the rest is empty then
	Summary    string // "added flags --x to git push"
	Changed    bool
	Diff       []diffLine
	Effect     requests.Effect // the rule as it will stand
	Plan       string          // identifies Before and After, so Confirm applies what was shown
	UnlistedOK bool
	ConfirmURL string
}

// requestPath is the page route for request id and action ("decide",
// "apply"), with the id escaped as a path segment.
func requestPath(id, action string) string {
	return "/requests/" + url.PathEscape(id) + "/" + action
}

// viewRequest renders r for the page.
func viewRequest(s site, r *requests.Record, now time.Time) requestView {
	v := requestView{
		ID: r.ID, IDText: requests.Token(r.ID), Age: requests.Age(now, r.CreatedAt),
		Tool: requests.Token(r.Tool), Subcommand: requests.Subcommand(r.Subcommand),
		Rationale: requests.Text(r.Rationale), Enables: requests.Text(r.Enables),
		DecideURL: requestPath(r.ID, "decide"), ApplyURL: requestPath(r.ID, "apply"),
		Status: r.Status, State: requests.GrantStatus(r, now), DecidedBy: requests.Token(r.DecidedBy),
	}
	if r.Client != "" {
		// A decision made in an elicitation client names it.
		v.DecidedBy += " (" + requests.Text(r.Client) + ")"
	}
	if r.Call != nil {
		v.Exact = true
		v.Command = requests.Command(r.Call.Command)
		v.Cwd = requests.Token(r.Call.Cwd)
		for _, tok := range r.Call.Command {
			v.Tokens = append(v.Tokens, requests.Command([]string{tok}))
		}
	} else {
		v.Tokens = append([]string{v.Tool}, strings.Fields(v.Subcommand)...)
		for _, f := range r.Flags {
			v.Tokens = append(v.Tokens, requests.Token(f))
		}
	}
	for _, f := range r.Flags {
		fv := flagView{Flag: requests.Token(f), Mark: requests.Mark(r.Tool, r.Subcommand, policy.ListingOf(s.Helps, r.Tool, r.Subcommand, f))}
		v.Unlisted = v.Unlisted || fv.Mark != ""
		if s.Helps != nil && len(r.Subcommand) > 0 {
			if h, ok := s.Helps.Flag(r.Tool, r.Subcommand, f); ok {
				fv.Help = requests.Text(h.Description)
			}
		}
		v.Flags = append(v.Flags, fv)
	}
	if r.Status == requests.StatusPending && len(r.Subcommand) == 0 && !hasBareRule(s.Policy, r.Tool) {
		v.AnyNote = "This asks for any subcommand: it can be approved only where the tool already has a bare rule (subcommand: []), and " +
			requests.Token(r.Tool) + " has none."
	}
	if r.DecidedAt != nil {
		v.DecidedAt = r.DecidedAt.UTC().Format("2006-01-02 15:04:05Z")
	}
	if r.Reason != nil {
		v.Reason = requests.Text(*r.Reason)
	}
	v.Applied = r.Applied != nil && *r.Applied
	return v
}

// addDanger adds to v, the view of r, what the catalog says of its
// subcommand and each requested flag, from e (the effect of approving it).
func (v *requestView) addDanger(r *requests.Record, e requests.Effect) {
	if len(e.Danger) > 0 {
		v.SubDanger, v.SubGrave = requests.DangerText(e.Danger), e.Danger.Grave()
	}
	for i := range v.Flags {
		j := slices.IndexFunc(e.Flags, func(ef requests.EffectFlag) bool { return ef.Requested && ef.Flag == v.Flags[i].Flag })
		if j < 0 || len(e.Flags[j].Danger) == 0 {
			continue
		}
		v.Flags[i].Danger, v.Flags[i].Grave, v.Flags[i].Held = requests.DangerText(e.Flags[j].Danger), e.Flags[j].Danger.Grave(), e.Flags[j].Held
	}
	if unc := e.Unconfirmed(); len(unc) > 0 {
		v.Unconfirmed = strings.Join(unc, ", ")
	}
}

// reviewData fills the review page from the folded log and the policy.
func reviewData(s site, recs []*requests.Record, now time.Time) pageData {
	d := pageData{Counted: true}
	x := newEffects(s)
	var decided []*requests.Record
	for _, r := range recs {
		if r.Status != requests.StatusPending {
			decided = append(decided, r)
			continue
		}
		d.Pending++
		if len(d.Requests) < maxPendingShown {
			v := viewRequest(s, r, now)
			v.addDanger(r, x.of(r))
			d.Requests = append(d.Requests, v)
		}
	}
	d.MorePending = d.Pending - len(d.Requests)
	// Newest decision first; the log's order breaks ties.
	slices.Reverse(decided)
	slices.SortStableFunc(decided, func(a, b *requests.Record) int { return -cmp.Compare(decidedAt(a), decidedAt(b)) })
	for _, r := range decided[:min(len(decided), maxHistoryShown)] {
		d.History = append(d.History, viewRequest(s, r, now))
	}
	d.MoreHistory = len(decided) - len(d.History)
	d.Tools, d.NoPolicy = viewPolicy(s.Policy, s.Base, s.Grants), s.Policy == nil
	return d
}

// configFlags are the flags of the config's own rule for tool and sub, and
// whether the config has that rule.
func configFlags(base *policy.Policy, tool string, sub []string) (map[string]bool, bool) {
	if base == nil {
		return nil, false
	}
	for _, r := range base.ToolRules(tool) {
		if slices.Equal(r.Subcommand(), sub) {
			own := map[string]bool{}
			for _, f := range r.Flags() {
				own[f.Flag] = true
			}
			return own, true
		}
	}
	return nil, false
}

// grantedBy names the grants among grants that add flag (or, for "", the
// rule) to tool's rule for sub, each with its expiry: "grant req_… until
// 2026-12-02 18:30Z", "once-grant req_… until …"; "granted" when none is
// found (a grant's merge may add what its request did not name).
func grantedBy(grants []*requests.Record, tool string, sub []string, flag string) string {
	var names []string
	for _, g := range grants {
		if g.Grant == nil || g.Grant.Exact || g.Tool != tool || !slices.Equal(g.Subcommand, sub) {
			continue
		}
		if flag != "" && !slices.Contains(g.Flags, flag) {
			continue
		}
		kind := "grant "
		if g.Grant.Once {
			kind = "once-grant "
		}
		names = append(names, kind+requests.Token(g.ID)+" until "+g.Grant.Until.UTC().Format("2006-01-02 15:04Z"))
	}
	if len(names) == 0 {
		return "granted"
	}
	return strings.Join(names, "; ")
}

func decidedAt(r *requests.Record) int64 {
	if r.DecidedAt == nil {
		return 0
	}
	return r.DecidedAt.UnixNano()
}

// viewPolicy is the policy in service at a glance: each tool's exposed
// rules with the flags the operator wrote (-h and --help are seeded into
// every rule), and what the grants in force add beyond the config's own
// policy (base) marked with the grant and its expiry, so the operator sees
// what expires and what stays.
func viewPolicy(p, base *policy.Policy, grants []*requests.Record) []toolView {
	if p == nil {
		return nil
	}
	var out []toolView
	for _, name := range p.Tools() {
		t := toolView{Name: name}
		for _, r := range p.ToolRules(name) {
			if !r.Exposed() {
				continue
			}
			rv := ruleView{Command: r.Command()}
			own, ruleOfConfig := configFlags(base, name, r.Subcommand())
			if base != nil && !ruleOfConfig {
				rv.Grant = grantedBy(grants, name, r.Subcommand(), "")
			}
			for _, f := range r.Flags() {
				if f.Help {
					continue
				}
				rf := ruleFlag{Flag: f.Flag}
				if base != nil && ruleOfConfig && !own[f.Flag] {
					rf.Grant = grantedBy(grants, name, r.Subcommand(), f.Flag)
				}
				rv.Flags = append(rv.Flags, rf)
			}
			switch n, ok := r.PositionalMax(); {
			case !ok:
				rv.Positional = "any number of positional arguments"
			case n == 0:
				rv.Positional = "no positional arguments"
			default:
				rv.Positional = "at most " + strconv.Itoa(n) + " positional arguments"
			}
			if len(r.ArgPatterns()) > 0 {
				rv.Positional += ", matching " + strings.Join(r.ArgPatterns(), ", ")
			}
			t.Rules = append(t.Rules, rv)
		}
		out = append(out, t)
	}
	return out
}

// preview computes "Apply to config" for r without writing anything: the
// unified diff of the file, and the rule as it will stand.
func preview(s site, r *requests.Record, unlistedOK bool) *previewView {
	pv := &previewView{File: s.ConfigPath, UnlistedOK: unlistedOK, ConfirmURL: requestPath(r.ID, "apply")}
	p, err := edit.PlanApply(s.ConfigPath, r.Tool, r.Subcommand, r.Flags, s.Paths)
	if err != nil {
		pv.Error = oneLine(err.Error())
		return pv
	}
	pv.Summary = oneLine(p.Applied.String())
	pv.Changed = p.Applied.Changed()
	pv.Diff = unifiedDiff(filepath.Base(s.ConfigPath), p.Before, p.After)
	pv.Plan = planID(p)
	pv.Effect = requests.RuleEffectFor(s.Helps, catalogCLI(s.Policy, r.Tool), r, p.Rule)
	return pv
}

// planID identifies a preview: the file as read and as it would be
// written. Confirm applies only when it still matches, so the operator
// approves the change they saw, not one made by an edit since.
func planID(p edit.ApplyPreview) string {
	h := sha256.New()
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(p.Before))))
	h.Write(p.Before)
	h.Write(p.After)
	return hex.EncodeToString(h.Sum(nil))
}

// oneLine makes a message one line for the page: whitespace runs, line
// breaks included, become one space, and anything else that is not
// printable is written as its escape. Unlike requests.Text it leaves
// backslashes alone, since wraptool's own messages already show the
// assistant's tokens escaped.
func oneLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, unicode.IsSpace), " ")
	var b strings.Builder
	for _, r := range s {
		if unicode.IsPrint(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRuneToASCII(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}
