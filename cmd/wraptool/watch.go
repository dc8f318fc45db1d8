package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	oklogrun "github.com/oklog/run"
	"github.com/peterbourgon/ff/v4"
	"golang.org/x/term"

	"github.com/wraptool/wraptool/policy/requests"
)

// `wraptool requests watch`: it follows the request log and,
// in a terminal, asks for a decision on each pending request.
//
// Three goroutines: the follower (polls the log, sends logUpdates), the
// printer or the prompter (the command's own goroutine: it alone writes to
// stdout), and in a terminal the key reader (reads stdin, sends keyEvents).
// The first two form a run group ended by the command's context (SIGINT,
// SIGTERM) or by the prompter quitting; the key reader ends with stdin,
// which in a terminal means with the process.

const (
	// watchPoll is how often the follower looks at the request log. A
	// look is one stat unless the file changed.
	watchPoll = 250 * time.Millisecond
	// keyGuard is how long after a request is shown its keys are ignored,
	// so that nothing typed for one request decides the next.
	keyGuard = time.Second
	// promptKeys asks for a decision; promptApply follows it except for
	// an exact-call request, whose capability watch does not apply.
	promptKeys  = "[o]nce  [h]our  [d]eny  [s]kip"
	promptApply = ", or type apply⏎"
	// promptUnlistedKeys asks for a decision on a request with flags its
	// help does not list: o, h and apply are refused for it, so the prompt
	// offers the word that leads to approving it deliberately.
	promptUnlistedKeys = "[d]eny  [s]kip, or type unlisted⏎ to approve its unlisted flags"
	// unlistedPrompt follows the word unlisted and the warning: one more
	// key approves, after a first second of its own.
	unlistedPrompt = "approve with these unlisted flags: [o]nce  [h]our (Esc goes back) "
	// promptGraveKeys asks for a decision on a request that can hand the
	// credentials away with no pattern holding it: o, h and apply wait for
	// the word i-know, which the operator types after reading the effect.
	promptGraveKeys = "[d]eny  [s]kip, or type i-know⏎ to approve what can hand your credentials away"
	// reasonPrompt asks for a denial's reason.
	reasonPrompt = "reason (Enter sends it; empty is fine; Esc goes back): "
	// maxWord and maxReason bound what a line being typed can hold.
	maxWord   = 16
	maxReason = 1000
)

// The terms the o and h keys grant: what --once and --for 1h parse to.
var (
	watchOnce = &requests.Term{Once: true}
	watchHour = &requests.Term{Dur: time.Hour}
)

func (a *app) watchCommand() *ff.Command {
	var asJSON bool
	fs := ff.NewFlagSet("watch").SetParent(a.flags)
	fs.BoolVar(&asJSON, 0, "json", "print each request as one JSON line (the folded record, as list --json prints it); never ask")
	return &ff.Command{
		Name: "watch", Usage: "wraptool requests watch [--json]",
		ShortHelp: "follow new requests; in a terminal, decide each with one key",
		LongHelp: "Prints the pending requests, then each new one as it is filed (it follows the request log,\n" +
			"across rotation). When stdin and stdout are a terminal, and without --json, it shows each\n" +
			"pending request, oldest first, with what approving it does, and asks:\n" +
			"  " + promptKeys + promptApply + "\n" +
			"o approves it once (as approve --once), h for an hour (as --for 1h), the word apply then Enter\n" +
			"merges it into the config (as --apply), d asks for a reason and denies it, s leaves it pending.\n" +
			"A request with flags its subcommand's help does not list (NOT IN, HELP UNKNOWN) is approved\n" +
			"only deliberately: type the word unlisted then Enter, read the warning, then press o or h\n" +
			"(as approve --unlisted-ok --once or --for 1h). A request that can send your credentials\n" +
			"away, run code with them or print them, with no pattern holding it, takes the word i-know\n" +
			"then Enter before o, h or apply (as approve --i-know).\n" +
			"Keys typed before a request is shown, or in its first second, are ignored. Ctrl-C or Ctrl-D\n" +
			"ends it. Decisions are recorded with decided_by \"watch\".\n\n" +
			"Example:\n  wraptool requests watch",
		Flags: fs,
		Exec: func(ctx context.Context, args []string) error {
			rest, err := interspersed(fs, args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return usageErrorf("requests watch takes no arguments, got %q", rest[0])
			}
			return a.watch(ctx, asJSON)
		},
	}
}

// watch follows the request log until interrupted (exit status 0), only
// printing with --json or without a terminal, asking in one.
func (a *app) watch(ctx context.Context, asJSON bool) error {
	ctx, stop := a.signalContext(ctx)
	defer stop()
	o, err := a.configOperator(ctx)
	if err != nil {
		return err
	}
	logPath := o.requestLog()
	tty, interactive := a.watchTerminal()
	interactive = interactive && !asJSON

	// updates: unbuffered; the follower sends, the printer or prompter
	// receives. A busy receiver (deciding) holds the follower back: what
	// it reports must not be lost.
	updates := make(chan logUpdate)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := newFollower(logPath)
	var g oklogrun.Group
	g.Add(func() error { return f.run(ctx, watchPoll, updates) }, func(error) { cancel() })
	if interactive {
		g.Add(func() error { return a.promptWatched(ctx, tty, logPath, updates) }, func(error) { cancel() })
	} else {
		g.Add(func() error { return a.printWatched(ctx, o, updates, asJSON) }, func(error) { cancel() })
	}
	return g.Run()
}

// watchTerminal returns stdin and whether both it and stdout are a
// terminal: only then can a person answer one key at a time.
func (a *app) watchTerminal() (*os.File, bool) {
	in, ok := a.stdin.(*os.File)
	out, ok2 := a.stdout.(*os.File)
	return in, ok && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(out.Fd()))
}

// printWatched prints each request the follower reports, as a JSON line
// (asJSON) or a block of text, until ctx ends.
func (a *app) printWatched(ctx context.Context, o *operator, updates <-chan logUpdate, asJSON bool) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetEscapeHTML(false)
	for {
		var u logUpdate
		select {
		case <-ctx.Done():
			return nil
		case u = <-updates:
		}
		for _, p := range u.Problems {
			fmt.Fprintln(a.stderr, p)
		}
		if u.First && len(u.Added) == 0 && !asJSON {
			if _, err := fmt.Fprintln(a.stdout, "no pending requests"); err != nil {
				return err
			}
		}
		for _, r := range u.Added {
			var err error
			if asJSON {
				err = enc.Encode(r)
			} else {
				err = o.describe(a.stdout, r, time.Now())
			}
			if err != nil {
				return err
			}
		}
	}
}

// describe prints a request as watch shows it, everything the assistant
// wrote escaped (requests.Token, Text): the flags with the mark of any the
// help does not list (when o has a config: a watch whose config stopped
// loading still shows requests), and an exact call's command.
func (o *operator) describe(w io.Writer, r *requests.Record, now time.Time) error {
	status := ""
	if r.Status != requests.StatusPending {
		status = " (" + requests.GrantStatus(r, now) + ")"
	}
	asks := requests.Token(r.Tool) + " " + requests.Subcommand(r.Subcommand)
	flags := requests.Flags(r.Flags)
	if o.loaded != nil {
		flags = o.flagsText(r)
	}
	if flags != "" {
		asks += " " + flags
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Request %s%s, filed %s ago:\n", requests.Token(r.ID), status, requests.Age(now, r.CreatedAt))
	fmt.Fprintf(&b, "  asks for:  %s\n", asks)
	if r.Call != nil {
		fmt.Fprintf(&b, "  exactly:   %s\n", requests.Command(r.Call.Command))
		fmt.Fprintf(&b, "  in:        %s\n", requests.Token(r.Call.Cwd))
	}
	fmt.Fprintf(&b, "  rationale: %s\n", requests.Text(r.Rationale))
	if r.Enables != "" {
		fmt.Fprintf(&b, "  enables:   %s\n", requests.Text(r.Enables))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// promptWatched runs the prompter on the terminal tty, in raw mode (one key
// at a time, no echo), and restores the terminal however it ends.
func (a *app) promptWatched(ctx context.Context, tty *os.File, logPath string, updates <-chan logUpdate) error {
	fd := int(tty.Fd())
	state, err := term.MakeRaw(fd)
	if err != nil {
		return fmt.Errorf("requests watch: make the terminal raw: %w", err)
	}
	defer term.Restore(fd, state)
	// Raw mode also stops the terminal turning \n into \r\n.
	stdout, stderr := a.stdout, a.stderr
	defer func() { a.stdout, a.stderr = stdout, stderr }()
	a.stdout = crlf{stdout}
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		a.stderr = crlf{stderr}
	}

	// keys: a few reads' worth of buffer; the key reader sends, the
	// prompter receives. While it decides, the reader waits (keys are
	// never dropped here: the prompter drops them by their time).
	keys := make(chan keyEvent, 16)
	done := make(chan struct{})
	defer close(done)
	go readKeys(tty, time.Now, keys, done)
	p := newPrompter(a.stdout, a.stderr, &logDecider{a: a, logPath: logPath}, time.Now)
	err = p.run(ctx, keys, updates)
	fmt.Fprintln(a.stdout)
	return err
}
