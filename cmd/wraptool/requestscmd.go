package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/peterbourgon/ff/v4"
	"golang.org/x/term"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/config"
	"github.com/wraptool/wraptool/policy/config/edit"
	"github.com/wraptool/wraptool/policy/danger"
	"github.com/wraptool/wraptool/policy/requests"
)

// defaultTableWidth is the width the requests table is made to fit when
// stdout is not a terminal, or one whose size is unknown; in a terminal
// the table fits its width. The rationale is cut to fit (--wide and --json
// carry it whole), the flags never are.
const defaultTableWidth = 80

func (a *app) requestsCommand() *ff.Command {
	var (
		status     string
		asJSON     bool
		wide       bool
		apply, yes bool
		unlistedOK bool
		iKnow      bool
		once       bool
		forArg     string
		reason     string
	)
	listFlags := ff.NewFlagSet("list").SetParent(a.flags)
	stringFlag(listFlags, &status, "status", "pending", "STATUS", "pending, approved, denied or all")
	listFlags.BoolVar(&asJSON, 0, "json", "one JSON object per line: each request folded with its decision")
	listFlags.BoolVar(&wide, 0, "wide", "print each rationale whole (escaped), not cut to the terminal's width")
	approveFlags := ff.NewFlagSet("approve").SetParent(a.flags)
	approveFlags.BoolVar(&apply, 0, "apply", "also merge the capability into the config (it hot-reloads)")
	approveFlags.BoolVar(&yes, 0, "yes", "do not ask for confirmation")
	approveFlags.BoolVar(&unlistedOK, 0, "unlisted-ok", "approve flags the subcommand's help does not list, spelled exactly")
	approveFlags.BoolVar(&iKnow, 0, "i-know", "grant or apply a flag or subcommand that can hand your credentials away with no pattern holding it (--yes is not enough)")
	approveFlags.BoolVar(&once, 0, "once", "allow one call, within 24h, without changing the config")
	stringFlag(approveFlags, &forArg, "for", "", "DURATION", "allow calls for this long (a Go duration, at most 168h), without changing the config")
	denyFlags := ff.NewFlagSet("deny").SetParent(a.flags)
	stringFlag(denyFlags, &reason, "reason", "", "TEXT", "why, for the assistant (it reads it back with wraptool_request_status)")

	list := &ff.Command{
		Name: "list", Usage: "wraptool requests list [--status pending|approved|denied|all] [--wide] [--json]",
		ShortHelp: "list capability requests (pending by default)",
		LongHelp: "Lists the capability requests in the request log, newest last: id, age, status (with a\n" +
			"grant's term), tool, subcommand, flags and rationale, escaped so that nothing the\n" +
			"assistant wrote reaches the terminal raw. The rationale is cut to the terminal's width\n" +
			"unless --wide; --json prints one folded record per line.\n\n" +
			"Example:\n  wraptool requests list --status all",
		Flags: listFlags,
		Exec: func(ctx context.Context, args []string) error {
			rest, err := interspersed(listFlags, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usageErrorf("requests list takes no arguments, got %q", rest[0])
			}
			return a.listRequests(ctx, status, asJSON, wide)
		},
	}
	approve := &ff.Command{
		Name: "approve", Usage: "wraptool requests approve ID [--apply | --once | --for DURATION] [--yes] [--unlisted-ok] [--i-know]",
		ShortHelp: "approve a request: by hand, merged into the config (--apply), or for now (--once, --for)",
		LongHelp: "Prints the rule as it will stand (every flag with its help line, the positional limit; or,\n" +
			"for an exact-call request, the exact command), asks approve? [y/N] when stdin is a terminal\n" +
			"(unless --yes), then records the decision. Without --apply, --once or --for that is all it\n" +
			"does: nothing is allowed until a rule exists. --apply writes the rule into the config; --once\n" +
			"and --for grant the capability (or the exact call) now, through the request log, without\n" +
			"touching the config. A grant or an apply of a flag that sends your credentials, runs\n" +
			"code or prints credentials with no pattern holding its value (or of a subcommand that\n" +
			"prints credentials) needs i-know typed at the prompt, or --i-know: --yes is not enough.\n" +
			"Flags may come before or after the ID.\n\n" +
			"Example:\n  wraptool requests approve req_1a2b3c4d --for 1h",
		Flags: approveFlags,
		Exec: func(ctx context.Context, args []string) error {
			id, err := oneID("approve", approveFlags, args)
			if err != nil {
				return err
			}
			g, err := grantTerms(apply, once, forArg)
			if err != nil {
				return err
			}
			return a.approve(ctx, id, approval{apply: apply, yes: yes, unlistedOK: unlistedOK, iKnow: iKnow, grant: g})
		},
	}
	deny := &ff.Command{
		Name: "deny", Usage: "wraptool requests deny ID [--reason TEXT]",
		ShortHelp: "deny a request; the reason is for the assistant",
		LongHelp: "Records the denial in the request log; the assistant reads the reason back through\n" +
			"wraptool_request_status, and a call waiting on the request returns with it.\n\n" +
			"Example:\n  wraptool requests deny req_1a2b3c4d --reason 'use --depth 1 instead'",
		Flags: denyFlags,
		Exec: func(ctx context.Context, args []string) error {
			id, err := oneID("deny", denyFlags, args)
			if err != nil {
				return err
			}
			return a.deny(ctx, id, reason)
		},
	}
	return &ff.Command{
		Name:        "requests",
		Usage:       "wraptool requests SUBCOMMAND",
		ShortHelp:   "review the assistant's capability requests",
		Flags:       ff.NewFlagSet("requests").SetParent(a.flags),
		Subcommands: []*ff.Command{list, approve, deny, a.watchCommand()},
		Exec:        unknownCommand,
	}
}

// interspersed sets the flags found among args, which ff leaves unparsed
// once it meets the first positional argument, and returns the positional
// arguments: so `approve ID --apply` means `approve --apply ID`. A flag
// takes the next argument as its value unless it is a switch (ff gives a
// switch no placeholder) or is written --flag=value; "--" ends the flags.
func interspersed(fs *ff.FlagSet, args []string) ([]string, error) {
	var rest []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(rest, args[i+1:]...), nil
		}
		if len(arg) < 2 || arg[0] != '-' {
			rest = append(rest, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		f, ok := fs.GetFlag(name)
		if !ok {
			return nil, usageErrorf("%s: unknown flag %q", fs.GetName(), name)
		}
		switch {
		case hasValue:
		case f.GetPlaceholder() == "":
			value = "true"
		case i+1 < len(args):
			i++
			value = args[i]
		default:
			return nil, usageErrorf("%s: flag --%s needs a value", fs.GetName(), name)
		}
		if err := f.SetValue(value); err != nil {
			return nil, usageErrorf("%s: --%s: %v", fs.GetName(), name, err)
		}
	}
	return rest, nil
}

// oneID returns the one request id among args.
func oneID(cmd string, fs *ff.FlagSet, args []string) (string, error) {
	rest, err := interspersed(fs, args)
	if err != nil {
		return "", err
	}
	if len(rest) != 1 {
		return "", usageErrorf("requests %s takes one request ID, got %d arguments", cmd, len(rest))
	}
	return rest[0], nil
}

// operator is what every requests command works with: the config (for the
// log's path, --apply, and the help the introspection cache holds) and the
// folded log.
type operator struct {
	path   string
	loaded *config.Loaded
	recs   []*requests.Record
}

func (a *app) operator(ctx context.Context) (*operator, error) {
	o, err := a.configOperator(ctx)
	if err != nil {
		return nil, err
	}
	recs, warns, err := requests.Read(o.requestLog())
	if err != nil {
		return nil, err
	}
	for _, w := range warns {
		// A warning quotes what it skipped (an id), which anything that
		// could write the log chose.
		fmt.Fprintf(a.stderr, "warning: %s: skipped %s\n", o.requestLog(), requests.Text(w.String()))
	}
	o.recs = recs
	return o, nil
}

// configOperator is an operator without the log folded: watch follows the
// log itself.
func (a *app) configOperator(ctx context.Context) (*operator, error) {
	path, l, err := a.loadResolvedConfig(ctx)
	if err != nil {
		return nil, err
	}
	return &operator{path: path, loaded: l}, nil
}

// requestLog is the request log's path, as the config names it.
func (o *operator) requestLog() string { return o.loaded.Config.MCP.RequestLog }

// pending finds a request that can still be decided.
func (o *operator) pending(id string) (*requests.Record, error) {
	i := slices.IndexFunc(o.recs, func(r *requests.Record) bool { return r.ID == id })
	switch {
	case i < 0:
		return nil, fmt.Errorf("no request has the id %s (see wraptool requests list --status all)", requests.Token(id))
	case o.recs[i].Status != requests.StatusPending:
		return nil, fmt.Errorf("%s is already %s", id, o.recs[i].Status)
	}
	return o.recs[i], nil
}

func (a *app) listRequests(ctx context.Context, status string, asJSON, wide bool) error {
	switch status {
	case "pending", "approved", "denied", "all":
	default:
		return usageErrorf("requests list: --status %q: want pending, approved, denied or all", status)
	}
	o, err := a.operator(ctx)
	if err != nil {
		return err
	}
	var shown []*requests.Record
	for _, r := range o.recs {
		if status == "all" || r.Status == status {
			shown = append(shown, r)
		}
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range shown {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}
	if len(shown) == 0 {
		what := status + " requests"
		if status == "all" {
			what = "requests"
		}
		_, err := fmt.Fprintf(a.stdout, "no %s\n", what)
		return err
	}
	rows := [][]string{{"ID", "AGE", "STATUS", "TOOL", "SUBCOMMAND", "FLAGS", "RATIONALE"}}
	for _, r := range shown {
		flags := o.flagsText(r)
		if r.Call != nil {
			// An exact-call request: the command itself, as it would run,
			// then each flag of it the help does not list, marked.
			flags = "exactly: " + requests.Command(r.Call.Command)
			if unlisted := o.unlistedText(r); unlisted != "" {
				flags += "; " + unlisted
			}
		}
		rows = append(rows, []string{requests.Token(r.ID), requests.Age(time.Now(), r.CreatedAt), requests.GrantStatus(r, time.Now()),
			requests.Token(r.Tool), requests.Subcommand(r.Subcommand), flags, requests.Text(r.Rationale)})
	}
	// The rationale gets what the other columns leave of the width.
	used := 0
	for col := 0; col < len(rows[0])-1; col++ {
		wide := 0
		for _, row := range rows {
			wide = max(wide, utf8.RuneCountInString(row[col]))
		}
		used += wide + 2
	}
	room := max(a.tableWidth()-used, 8)
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		if !wide {
			row[len(row)-1] = ellipsis(row[len(row)-1], room)
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// tableWidth is the width the requests table fits: the terminal's, when
// stdout is one whose size is known, else defaultTableWidth.
func (a *app) tableWidth() int {
	if f, ok := a.stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
			return w
		}
	}
	return defaultTableWidth
}

// flagsText renders a request's flags, each one its subcommand's help does
// not list marked: "--rece (NOT IN 'git push --help')", or "--rece (HELP
// UNKNOWN for 'git push')" where that help is unknown.
func (o *operator) flagsText(r *requests.Record) string {
	return requests.MarkedFlags(o.loaded.Helps, r.Tool, r.Subcommand, r.Flags)
}

// unlistedText renders the request's flags its subcommand's help does not
// list, with their mark ("--rece (NOT IN 'git push --help')"), for an exact
// call, whose displays show the command instead of the flags; "" when
// there are none.
func (o *operator) unlistedText(r *requests.Record) string {
	unlisted, l := requests.Unlisted(o.loaded.Helps, r.Tool, r.Subcommand, r.Flags)
	if len(unlisted) == 0 {
		return ""
	}
	return requests.Flags(unlisted) + " " + requests.Mark(r.Tool, r.Subcommand, l)
}

// approval is what `requests approve` was asked to do.
type approval struct {
	apply, yes, unlistedOK bool
	// iKnow confirms a grant or an apply of what can hand the credentials
	// away with nothing holding it (requests.Effect.Unconfirmed).
	iKnow bool
	// grant is a temporary grant's terms; nil for a plain approval or
	// --apply.
	grant *requests.Term
}

// recordsOnly reports whether ap is a plain approval: no --apply, no
// grant. It records a yes and allows nothing by itself.
func (ap approval) recordsOnly() bool { return !ap.apply && ap.grant == nil }

// recordOnlyHeading heads a plain approval's effect: it must not read as
// if it granted the rule it shows (the operator would believe the
// assistant can now run it), so it says what it records and what would
// allow the rule.
func recordOnlyHeading(command string) []string {
	return []string{
		"Approving records the decision only: it allows nothing until a rule exists.",
		"With --apply (written to the config) or --once / --for (granted now), the rule for " + command + " would stand as:",
	}
}

// grantTerms checks --apply, --once and --for together (any two of them, or
// a bad duration, is a usage error).
func grantTerms(apply, once bool, forArg string) (*requests.Term, error) {
	t, err := requests.ParseTerm(apply, once, forArg, func(name string) string { return "--" + name })
	if err != nil {
		return nil, usageErrorf("requests approve: %v", err)
	}
	return t, nil
}

func (a *app) approve(ctx context.Context, id string, ap approval) error {
	o, err := a.operator(ctx)
	if err != nil {
		return err
	}
	r, err := o.pending(id)
	if err != nil {
		return err
	}
	if err := o.bareRuleRefusal(r); err != nil {
		return err
	}
	a.learnHelps(ctx, o, r)
	a.printRequest(o, r)
	effect, previewErr := a.approvalEffect(o, r, ap.grant != nil)
	if ap.recordsOnly() && previewErr == nil {
		effect, _ = a.effectAs(o, r, recordOnlyHeading)
	}
	if ap.grant != nil {
		effect += "  for now: " + ap.grant.String(time.Now()) + "; the config is not changed\n"
	}
	fmt.Fprint(a.stdout, effect)
	if err := o.refusal(r, ap, previewErr); err != nil {
		return err
	}
	unconfirmed, hidden := a.unconfirmed(o, r, ap)
	switch {
	case hidden:
		return errors.New(requests.ExactHiddenRefusal(r.ID, unconfirmed))
	case len(unconfirmed) > 0 && !ap.iKnow && (ap.yes || !a.interactive()):
		// --yes answers "approve?", not this: it is asked for by name.
		return errors.New(requests.DangerRefusal(r.ID, unconfirmed, "--i-know"))
	case len(unconfirmed) > 0 && !ap.iKnow:
		fmt.Fprintf(a.stdout, "This hands the assistant what can send your credentials away, run code with them or print them, "+
			"and no pattern holds it: %s.\nType i-know to approve: ", strings.Join(unconfirmed, ", "))
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if strings.TrimSpace(answer) != "i-know" {
			return fmt.Errorf("not approved: %s stays pending", id)
		}
	case !ap.yes && a.interactive():
		fmt.Fprint(a.stdout, "approve? [y/N] ")
		answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return fmt.Errorf("not approved: %s stays pending", id)
		}
	}
	return a.recordApproval(ctx, o, r, ap, requests.DecidedByCLI)
}

// bareRuleRefusal refuses a request for no subcommand unless the tool
// already has a bare rule: approving it would otherwise allow every
// subcommand.
func (o *operator) bareRuleRefusal(r *requests.Record) error {
	tool := o.loaded.Config.Tools[r.Tool]
	if len(r.Subcommand) == 0 && (tool == nil || !slices.ContainsFunc(tool.Allow, func(a *policy.AllowRule) bool { return len(a.Subcommand) == 0 })) {
		return fmt.Errorf("%s asks for %s <ANY SUBCOMMAND>: that can be approved only where the tool already has a bare rule (subcommand: [])",
			requests.Token(r.ID), requests.Token(r.Tool))
	}
	return nil
}

// approvalEffect is what approving r does, as approve prints it: the exact
// call for a grant on an exact-call request, else the rule as it will
// stand. err says why it cannot be done (see effect and exactEffect).
func (a *app) approvalEffect(o *operator, r *requests.Record, grant bool) (string, error) {
	if r.Call != nil && grant {
		return a.exactEffect(o, r)
	}
	return a.effect(o, r)
}

// refusal says why ap cannot be recorded for r, given what its effect's
// preview found (previewErr): a merge that cannot be made refuses --apply
// and a grant, a flag the help does not list (any flag, where that help is
// unknown) refuses any approval unless ap.unlistedOK.
func (o *operator) refusal(r *requests.Record, ap approval, previewErr error) error {
	id := requests.Token(r.ID)
	if previewErr != nil && ap.apply {
		return fmt.Errorf("not applied, %s stays pending: %w", id, previewErr)
	}
	if previewErr != nil && ap.grant != nil {
		return fmt.Errorf("not granted, %s stays pending: %w", id, previewErr)
	}
	if unlisted, l := requests.Unlisted(o.loaded.Helps, r.Tool, r.Subcommand, r.Flags); len(unlisted) > 0 && !ap.unlistedOK {
		return errors.New(requests.UnlistedRefusal(r.ID, r.Tool, r.Subcommand, unlisted, l, "--unlisted-ok"))
	}
	return nil
}

// recordApproval carries out an approval that passed its checks: it merges
// the capability into the config for ap.apply, then records the decision,
// as decided by by, and prints what it did.
func (a *app) recordApproval(ctx context.Context, o *operator, r *requests.Record, ap approval, by string) error {
	id := requests.Token(r.ID)
	if ap.apply {
		applied, err := edit.ApplyRequest(o.path, r.Tool, r.Subcommand, r.Flags, a.configOptions())
		if err != nil {
			return fmt.Errorf("not applied, %s stays pending: %w", id, err)
		}
		fmt.Fprintln(a.stdout, applied)
	}
	// The decision is written only after the config write succeeded.
	now := time.Now()
	d := requests.Decision{Status: requests.StatusApproved, Applied: ap.apply, DecidedBy: by}
	if ap.grant != nil {
		d.Grant = ap.grant.Grant(r, config.CanonicalPath(o.path), now)
	}
	if err := requests.Decide(ctx, o.requestLog(), r.ID, d, now); err != nil {
		if ap.apply {
			return fmt.Errorf("the config was changed, but the decision could not be recorded (%w); run: wraptool requests approve %s", err, id)
		}
		return err
	}
	if ap.grant != nil {
		_, err := fmt.Fprintf(a.stdout, "approved %s %s\n", id, ap.grant.String(now))
		return err
	}
	if !ap.apply {
		_, err := fmt.Fprintf(a.stdout, "approved %s (nothing is allowed until a rule exists: --apply writes it, --once / --for grant it now)\n", id)
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "approved %s\n", id)
	return err
}

// exactEffect renders what approving an exact-call request for now allows:
// exactly its command, in its directory; err refuses the grant when the
// policy changed since the denial, or when the call is refused for a reason
// no exact grant lifts (a deny rule, a denied flag, a NUL…).
func (a *app) exactEffect(o *operator, r *requests.Record) (string, error) {
	text := "\n" + strings.Join(requests.ExactLinesFor(o.cli(r.Tool), r, o.unlistedText(r)), "\n") + "\n"
	return text, r.Grantable(o.loaded.Policy, o.loaded.PolicyHash())
}

func (a *app) deny(ctx context.Context, id, reason string) error {
	o, err := a.operator(ctx)
	if err != nil {
		return err
	}
	if _, err := o.pending(id); err != nil {
		return err
	}
	return a.recordDenial(ctx, o.requestLog(), id, reason, requests.DecidedByCLI)
}

// recordDenial records a denial of id in the log at logPath, as decided by
// by, and prints it.
func (a *app) recordDenial(ctx context.Context, logPath, id, reason, by string) error {
	d := requests.Decision{Status: requests.StatusDenied, Reason: reason, DecidedBy: by}
	if err := requests.Decide(ctx, logPath, id, d, time.Now()); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "denied %s\n", requests.Token(id))
	return err
}

// printRequest shows what the assistant asked, escaped (it cannot repaint
// the screen or pass for another request), each flag the help does not
// list marked.
func (a *app) printRequest(o *operator, r *requests.Record) {
	fmt.Fprintf(a.stdout, "Request %s, filed %s ago:\n", requests.Token(r.ID), requests.Age(time.Now(), r.CreatedAt))
	fmt.Fprintf(a.stdout, "  asks for:  %s %s %s\n", requests.Token(r.Tool), requests.Subcommand(r.Subcommand), o.flagsText(r))
	fmt.Fprintf(a.stdout, "  rationale: %s\n", requests.Text(r.Rationale))
	if r.Enables != "" {
		fmt.Fprintf(a.stdout, "  enables:   %s\n", requests.Text(r.Enables))
	}
}

// effect renders what approving grants: the rule as it will stand after the
// merge, every flag with its help line and what it takes (a switch, any
// value, value-taking unknown), and the positional limit (requests.RuleEffect, which every screen
// that asks for a decision shows). err says why the merge could not be made
// (then --apply is refused).
func (a *app) effect(o *operator, r *requests.Record) (string, error) {
	return a.effectAs(o, r, nil)
}

// effectAs is effect with its heading given by heading (of the tool and
// subcommand, escaped); nil keeps the heading every deciding screen shows.
func (a *app) effectAs(o *operator, r *requests.Record, heading func(command string) []string) (string, error) {
	rule, _, err := edit.PreviewApply(o.path, r.Tool, r.Subcommand, r.Flags, a.configOptions())
	if err != nil {
		command := requests.Token(r.Tool) + " " + requests.Subcommand(r.Subcommand)
		return fmt.Sprintf("\nApproving records the decision; the capability cannot be merged into the config: %v\nIt asks for: %s %s\n",
			err, command, requests.Flags(r.Flags)), err
	}
	e := requests.RuleEffectFor(o.loaded.Helps, o.cli(r.Tool), r, rule)
	lines := e.Lines()
	if heading != nil {
		lines = append(heading(e.Command), lines[1:]...)
	}
	return "\n" + strings.Join(lines, "\n") + "\n", nil
}

// cli names the danger catalog's CLI for the config's tool: by its
// binary, so tools.mygit with /usr/bin/git is read as git.
func (o *operator) cli(tool string) string {
	binary := ""
	if t := o.loaded.Config.Tools[tool]; t != nil {
		binary = t.Binary
	}
	return danger.CLI(tool, binary)
}

// unconfirmed lists what approving r as ap hands the assistant that can
// send the credentials away, run code with them or print them, with no
// pattern holding it (requests.Effect.Unconfirmed; for an exact-call
// grant, its grave flags and subcommand): a grant or an apply of it needs
// the operator to say so in words. hidden says an exact call's command
// cannot be shown whole, so no confirmation can be informed and the grant
// is refused. nil when nothing needs confirming, or the effect cannot be
// computed (then the approval is refused for that).
func (a *app) unconfirmed(o *operator, r *requests.Record, ap approval) (unconfirmed []string, hidden bool) {
	if ap.recordsOnly() {
		return nil, false
	}
	if r.Call != nil && !ap.apply {
		return requests.ExactUnconfirmed(o.cli(r.Tool), r)
	}
	rule, _, err := edit.PreviewApply(o.path, r.Tool, r.Subcommand, r.Flags, a.configOptions())
	if err != nil {
		return nil, false
	}
	return requests.RuleEffectFor(o.loaded.Helps, o.cli(r.Tool), r, rule).Unconfirmed(), false
}

// learnHelps learns the help of r's subcommand when the cache lacks it, so
// the effect and the flag marks say what the help says: the CLI's load
// reads the cache only, and a request's subcommand is often one no rule
// names yet. Only a tool the config has, and a subcommand no deny rule
// covers, is run. It runs the same fixed forms, under the same limits (5 s per
// run, at most 4 at once), into the same cache as the server, on the config
// as the request would leave it; a failure leaves o as it was (the effect
// then fails closed: HELP UNKNOWN, value-taking unknown).
func (a *app) learnHelps(ctx context.Context, o *operator, r *requests.Record) {
	if !config.HelpWanted(o.loaded.Policy, o.loaded.Helps, r.Tool, r.Subcommand) {
		return
	}
	in := a.newIntrospector(nil, false)
	defer in.Close()
	spec := config.GrantSpec{ID: r.ID, Tool: r.Tool, Subcommand: r.Subcommand, Flags: r.Flags}
	helps, err := o.loaded.LearnWith(ctx, a.introspection(in), []config.GrantSpec{spec})
	if err != nil {
		a.log.Warn("help not learned", "tool", requests.Token(r.Tool), "error", err)
		return
	}
	o.loaded = o.loaded.WithHelps(helps)
}

// interactive reports whether a person can answer a prompt: stdin is a
// terminal.
func (a *app) interactive() bool {
	f, ok := a.stdin.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// ellipsis cuts s to n characters, marking the cut.
func ellipsis(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
