package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	oklogrun "github.com/oklog/run"
	"github.com/peterbourgon/ff/v4"
	"golang.org/x/term"

	"github.com/wraptool/wraptool/policy"
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

// Bytes the prompter acts on.
const (
	keyCtrlC     = 0x03
	keyCtrlD     = 0x04
	keyBackspace = 0x08
	keyCtrlU     = 0x15
	keyEsc       = 0x1b
	keyDelete    = 0x7f
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
			"Keys typed before a request is shown, or in its first second, are ignored. Ctrl-C or Ctrl-D\n" +
			"ends it. Decisions are recorded with decided_by \"watch\".",
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
	p := newPrompter(a.stdout, a.stderr, &appActor{a: a, logPath: logPath}, time.Now)
	err = p.run(ctx, keys, updates)
	fmt.Fprintln(a.stdout)
	return err
}

// crlf writes \n as \r\n, for a terminal in raw mode.
type crlf struct{ w io.Writer }

func (c crlf) Write(p []byte) (int, error) {
	if _, err := c.w.Write([]byte(strings.ReplaceAll(string(p), "\n", "\r\n"))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// keyEvent is what one read of stdin returned, and when. The bytes of an
// escape sequence (an arrow key, Alt+key) arrive in one read, so a lone
// Esc is one that ends its read.
type keyEvent struct {
	data []byte
	at   time.Time
}

// readKeys sends what each read of r returns, stamped with now, until r
// ends (then it closes keys) or done is closed. A read in progress cannot
// be stopped: on a terminal the goroutine ends with the process.
func readKeys(r io.Reader, now func() time.Time, keys chan<- keyEvent, done <-chan struct{}) {
	defer close(keys)
	buf := make([]byte, 256)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			select {
			case keys <- keyEvent{data: slices.Clone(buf[:n]), at: now()}:
			case <-done:
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// watchActor carries out the prompter's decisions and shows what they
// would do. It prints to the prompter's output.
type watchActor interface {
	// show prints r and, last, what approving it does.
	show(ctx context.Context, r *requests.Record)
	// approve records an approval of r: a grant (ap.grant) or a merge into
	// the config (ap.apply). An error wrapping errShowAgain means it
	// printed a new effect instead; one wrapping requests.ErrDecided or
	// requests.ErrUnknownID that r can no longer be decided; any other
	// says why it was refused, and r stays pending.
	approve(ctx context.Context, r *requests.Record, ap approval) error
	// deny records a denial of r with reason; its errors are approve's.
	deny(ctx context.Context, r *requests.Record, reason string) error
}

// errShowAgain says the effect of an approval changed since it was shown
// (the config changed): the new one was printed, and the operator must
// look again before deciding.
var errShowAgain = errors.New("the effect changed since it was shown")

// appActor is the watchActor of the command: it decides as `requests
// approve` and `deny` do, with their checks, recorded as decided_by
// "watch".
type appActor struct {
	a       *app
	logPath string // the log watch follows, as the config named it at the start
	// shownID and shownEffect are the request shown last and the effect
	// it was shown with, which an approval must still have.
	shownID, shownEffect string
}

func (x *appActor) show(ctx context.Context, r *requests.Record) {
	out := x.a.stdout
	x.shownID, x.shownEffect = r.ID, ""
	o, err := x.a.configOperator(ctx)
	if err != nil {
		(&operator{}).describe(out, r, time.Now())
		fmt.Fprintf(out, "\nThe config does not load, so approving is refused until it does: %s\n", safeText(err.Error()))
		return
	}
	o.describe(out, r, time.Now())
	effect, err := x.a.approvalEffect(o, r, r.Call != nil)
	x.shownEffect = effect
	fmt.Fprint(out, effect)
	if err != nil && r.Call != nil {
		fmt.Fprintf(out, "  it cannot be granted: %s\n", safeText(err.Error()))
	}
}

func (x *appActor) approve(ctx context.Context, r *requests.Record, ap approval) error {
	id := requests.Token(r.ID)
	o, err := x.a.configOperator(ctx)
	if err != nil {
		return fmt.Errorf("not approved, %s stays pending: the config does not load: %w", id, err)
	}
	if o.requestLog() != x.logPath {
		return fmt.Errorf("not approved: the config now names another request log (%s); restart wraptool requests watch", o.requestLog())
	}
	// The request as the log holds it now: a decision made elsewhere
	// since it was shown must not be followed by a merge into the
	// config that no decision records.
	recs, _, err := requests.Read(x.logPath)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(recs, func(c *requests.Record) bool { return c.ID == r.ID })
	switch {
	case i < 0:
		return fmt.Errorf("%w: %s is no longer in %s", requests.ErrUnknownID, id, x.logPath)
	case recs[i].Status != requests.StatusPending:
		return fmt.Errorf("%w: %s is %s (decided by %s)", requests.ErrDecided, id, requests.GrantStatus(recs[i], time.Now()), requests.Token(recs[i].DecidedBy))
	}
	cur := recs[i]
	if err := o.bareRuleRefusal(cur); err != nil {
		return err
	}
	effect, previewErr := x.a.approvalEffect(o, cur, cur.Call != nil)
	if cur.ID != x.shownID || effect != x.shownEffect {
		fmt.Fprint(x.a.stdout, "\nThe config changed since this request was shown; approving it now does this instead:"+effect)
		x.shownID, x.shownEffect = cur.ID, effect
		return errShowAgain
	}
	if err := o.refusal(cur, ap, previewErr); err != nil {
		return err
	}
	return x.a.recordApproval(ctx, o, cur, ap, requests.DecidedByWatch)
}

func (x *appActor) deny(ctx context.Context, r *requests.Record, reason string) error {
	return x.a.recordDenial(ctx, x.logPath, r.ID, reason, requests.DecidedByWatch)
}

// promptMode is what the prompter's next key means.
type promptMode int

const (
	modeKey    promptMode = iota // one key decides (o, h, d, s)
	modeWord                     // a word is being typed (apply)
	modeReason                   // a denial's reason is being typed
)

// prompter is the interactive half of watch: it shows the pending
// requests one at a time, oldest first, each with its effect last, and
// turns the operator's keys into decisions. It runs on one goroutine, and
// only it (and its actor) writes to out.
type prompter struct {
	out, errs io.Writer
	act       watchActor
	now       func() time.Time
	guard     time.Duration

	started bool               // the follower's first update came
	waiting bool               // "waiting for requests" is the last thing printed
	queue   []*requests.Record // pending requests not yet shown, oldest first
	cur     *requests.Record   // the request shown; nil while none is
	// ignoreUntil drops the keys read before it: those typed before cur
	// was shown, and in its first second.
	ignoreUntil time.Time
	mode        promptMode
	buf         []byte // the word or the reason typed so far
}

func newPrompter(out, errs io.Writer, act watchActor, now func() time.Time) *prompter {
	return &prompter{out: out, errs: errs, act: act, now: now, guard: keyGuard}
}

// run shows requests and reads keys until ctx ends, stdin ends, or the
// operator types Ctrl-C or Ctrl-D; each of those is a normal end.
func (p *prompter) run(ctx context.Context, keys <-chan keyEvent, updates <-chan logUpdate) error {
	for {
		if p.cur == nil {
			p.next(ctx)
		}
		select {
		case <-ctx.Done():
			return nil
		case u := <-updates:
			p.update(u)
		case k, ok := <-keys:
			if !ok || p.keys(ctx, k) {
				return nil
			}
		}
	}
}

// next shows the oldest request in the queue, or says it waits.
func (p *prompter) next(ctx context.Context) {
	if len(p.queue) == 0 {
		if p.started && !p.waiting {
			fmt.Fprintln(p.out, "waiting for requests… (Ctrl-C to quit)")
			p.waiting = true
		}
		return
	}
	p.cur, p.queue = p.queue[0], p.queue[1:]
	p.waiting = false
	fmt.Fprintln(p.out)
	if n := len(p.queue); n > 0 {
		fmt.Fprintf(p.out, "(%d more pending after this one)\n", n)
	}
	p.act.show(ctx, p.cur)
	p.show()
}

// show prints the prompt for a request just shown, and starts its first
// second.
func (p *prompter) show() {
	p.prompt()
	p.ignoreUntil = p.now().Add(p.guard)
}

// prompt prints the prompt and waits for one key.
func (p *prompter) prompt() {
	p.mode, p.buf = modeKey, nil
	fmt.Fprint(p.out, p.promptLine())
}

func (p *prompter) promptLine() string {
	if p.cur.Call != nil {
		return promptKeys + " "
	}
	return promptKeys + promptApply + " "
}

// redraw prints the line being typed again, after a message broke it.
func (p *prompter) redraw() {
	switch p.mode {
	case modeReason:
		fmt.Fprint(p.out, reasonPrompt+string(p.buf))
	default:
		fmt.Fprint(p.out, p.promptLine()+string(p.buf))
	}
}

// update takes what the follower found: new requests join the queue,
// decisions made elsewhere take requests off it (or off the screen).
func (p *prompter) update(u logUpdate) {
	if len(u.Problems) > 0 {
		p.interrupt(func() {
			for _, s := range u.Problems {
				fmt.Fprintln(p.errs, s)
			}
		})
	}
	var added []*requests.Record
	for _, r := range u.Added {
		if r.Status == requests.StatusPending {
			added = append(added, r)
		}
	}
	if u.First {
		p.started = true
		if n := len(added); n > 0 {
			fmt.Fprintf(p.out, "%d pending %s, oldest first (Ctrl-C to quit)\n", n, plural(n, "request", "requests"))
		}
	}
	p.queue = append(p.queue, added...)
	for _, r := range u.Decided {
		if p.cur != nil && r.ID == p.cur.ID {
			fmt.Fprintf(p.out, "\n%s was %s meanwhile (decided by %s); moving on\n",
				requests.Token(r.ID), requests.GrantStatus(r, p.now()), requests.Token(r.DecidedBy))
			p.cur = nil
			continue
		}
		p.queue = slices.DeleteFunc(p.queue, func(q *requests.Record) bool { return q.ID == r.ID })
	}
}

// interrupt prints what fn prints on lines of its own, then the line being
// typed again.
func (p *prompter) interrupt(fn func()) {
	if p.cur == nil {
		fn()
		return
	}
	fmt.Fprintln(p.out)
	fn()
	p.redraw()
}

// keys handles one read of stdin; it reports whether the operator quit.
func (p *prompter) keys(ctx context.Context, k keyEvent) (quit bool) {
	for i := 0; i < len(k.data); i++ {
		b := k.data[i]
		if b == keyCtrlC || b == keyCtrlD {
			return true
		}
		// Typed before the request was shown, or in its first second:
		// meant for another one, or not meant.
		if p.cur == nil || k.at.Before(p.ignoreUntil) {
			continue
		}
		if b == keyEsc {
			if i == len(k.data)-1 {
				p.escape()
			}
			i += escapeLen(k.data[i+1:])
			continue
		}
		switch p.mode {
		case modeKey:
			p.key(ctx, b)
		case modeWord:
			p.word(ctx, b)
		case modeReason:
			p.reason(ctx, b)
		}
	}
	return false
}

// escapeLen is how many bytes after an Esc belong to its sequence: a CSI
// (Esc [ … final byte), an SS3 (Esc O x), or one key pressed with Alt.
func escapeLen(rest []byte) int {
	switch {
	case len(rest) == 0:
		return 0
	case rest[0] == '[':
		for i := 1; i < len(rest); i++ {
			if rest[i] >= 0x40 && rest[i] <= 0x7e {
				return i + 1
			}
		}
		return len(rest)
	case rest[0] == 'O':
		return min(2, len(rest))
	}
	return 1
}

// escape handles a lone Esc: it clears a word and goes back from a reason.
func (p *prompter) escape() {
	switch p.mode {
	case modeWord:
		fmt.Fprint(p.out, strings.Repeat("\b \b", len(p.buf)))
		p.mode, p.buf = modeKey, nil
	case modeReason:
		fmt.Fprintln(p.out, "\n(not denied)")
		p.prompt()
	}
}

// key handles a key at the prompt.
func (p *prompter) key(ctx context.Context, b byte) {
	switch {
	case b == 'o':
		fmt.Fprintln(p.out, "o")
		p.decide(ctx, func(ctx context.Context) error { return p.act.approve(ctx, p.cur, approval{grant: watchOnce}) })
	case b == 'h':
		fmt.Fprintln(p.out, "h")
		p.decide(ctx, func(ctx context.Context) error { return p.act.approve(ctx, p.cur, approval{grant: watchHour}) })
	case b == 'd':
		fmt.Fprintln(p.out, "d")
		p.mode, p.buf = modeReason, nil
		fmt.Fprint(p.out, reasonPrompt)
	case b == 's':
		fmt.Fprintf(p.out, "s\nskipped %s; it stays pending\n", requests.Token(p.cur.ID))
		p.cur = nil
	case b > ' ' && b < keyDelete:
		// Any other letter starts a word; only "apply" is one.
		p.mode, p.buf = modeWord, []byte{b}
		fmt.Fprintf(p.out, "%c", b)
	}
}

// word handles a key while a word is typed.
func (p *prompter) word(ctx context.Context, b byte) {
	switch {
	case b == '\r' || b == '\n':
		w := string(p.buf)
		p.mode, p.buf = modeKey, nil
		fmt.Fprintln(p.out)
		if w != "apply" {
			fmt.Fprintf(p.out, "%q is not an answer: press o, h, d or s, or type apply and Enter\n", w)
			p.prompt()
			return
		}
		if p.cur.Call != nil {
			fmt.Fprintf(p.out, "apply is not offered for an exact-call request: o and h allow exactly this call; to merge its "+
				"capability into the config instead, run wraptool requests approve %s --apply\n", requests.Token(p.cur.ID))
			p.prompt()
			return
		}
		p.decide(ctx, func(ctx context.Context) error { return p.act.approve(ctx, p.cur, approval{apply: true}) })
	case b == keyBackspace || b == keyDelete:
		p.buf = p.buf[:len(p.buf)-1]
		fmt.Fprint(p.out, "\b \b")
		if len(p.buf) == 0 {
			p.mode = modeKey
		}
	case b == keyCtrlU:
		fmt.Fprint(p.out, strings.Repeat("\b \b", len(p.buf)))
		p.mode, p.buf = modeKey, nil
	case b > ' ' && b < keyDelete && len(p.buf) < maxWord:
		p.buf = append(p.buf, b)
		fmt.Fprintf(p.out, "%c", b)
	}
}

// reason handles a key while a denial's reason is typed. The reason is the
// operator's own text, echoed as typed but for control characters.
func (p *prompter) reason(ctx context.Context, b byte) {
	switch {
	case b == '\r' || b == '\n':
		reason := strings.TrimSpace(string(p.buf))
		p.mode, p.buf = modeKey, nil
		fmt.Fprintln(p.out)
		p.decide(ctx, func(ctx context.Context) error { return p.act.deny(ctx, p.cur, reason) })
	case b == keyBackspace || b == keyDelete:
		if len(p.buf) > 0 {
			_, size := utf8.DecodeLastRune(p.buf)
			p.buf = p.buf[:len(p.buf)-size]
			fmt.Fprint(p.out, "\b \b")
		}
	case b == keyCtrlU:
		fmt.Fprint(p.out, strings.Repeat("\b \b", utf8.RuneCount(p.buf)))
		p.buf = nil
	case b >= ' ' && b != keyDelete && len(p.buf) < maxReason:
		p.buf = append(p.buf, b)
		p.out.Write([]byte{b})
	}
}

// decide runs a decision and says how it went. A decision once begun is
// finished even when a signal comes meanwhile: --apply may already have
// written the config, and its decision line must follow.
func (p *prompter) decide(ctx context.Context, fn func(context.Context) error) {
	err := fn(context.WithoutCancel(ctx))
	switch {
	case err == nil:
		p.cur = nil
	case errors.Is(err, errShowAgain):
		p.show()
	case errors.Is(err, requests.ErrDecided), errors.Is(err, requests.ErrUnknownID):
		fmt.Fprintf(p.out, "%s; moving on\n", safeText(err.Error()))
		p.cur = nil
	default:
		fmt.Fprintln(p.out, safeText(err.Error()))
		p.prompt()
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// safeText escapes, in a message that may quote the log (an error), every
// character strconv.IsPrint refuses, as requests.Text does, but keeps the
// message's line breaks and backslashes: it is wraptool's own text, in
// which the request's parts were escaped already.
func safeText(s string) string {
	return policy.Escape(s, func(r rune) bool { return r == '\n' || strconv.IsPrint(r) })
}

// logUpdate is what the follower found in one look at the log.
type logUpdate struct {
	// First marks the first look: Added then holds the pending requests
	// only (a missing log holds none).
	First bool
	// Added are the requests seen for the first time, in log order,
	// folded with their decision if they have one.
	Added []*requests.Record
	// Decided are requests seen pending before and decided since.
	Decided []*requests.Record
	// Problems are lines for stderr, each said once: lines the fold
	// skipped, and why the log could not be read.
	Problems []string
}

func (u logUpdate) empty() bool {
	return !u.First && len(u.Added) == 0 && len(u.Decided) == 0 && len(u.Problems) == 0
}

// follower reads the request log again whenever it changed, and reports
// what is new. It remembers every id it reported for its whole life, so a
// request is reported once even when the log is rotated (renamed away and
// started anew) or replaced by an older copy.
type follower struct {
	path string
	log  *requests.Log
	// looked is true after the first look; stamp is the file the last
	// fold read.
	looked bool
	stamp  fileStamp
	status map[string]string // every id reported, with its status then
	said   map[string]bool   // problems reported
}

// fileStamp tells a file changed: appended to, replaced or rewritten.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func newFollower(path string) *follower {
	return &follower{path: path, log: requests.Open(path), status: map[string]string{}, said: map[string]bool{}}
}

// run looks at the log now and every interval until ctx ends, sending each
// update that holds anything (and the first, always).
func (f *follower) run(ctx context.Context, interval time.Duration, updates chan<- logUpdate) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
		if u := f.poll(ctx); !u.empty() {
			select {
			case updates <- u:
			case <-ctx.Done():
				return nil
			}
		}
		timer.Reset(interval)
	}
}

// poll looks at the log once: one stat, and a fold when the file changed.
func (f *follower) poll(ctx context.Context) logUpdate {
	var u logUpdate
	info, err := os.Stat(f.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Nothing filed yet, or a rotation between its rename and the
		// new file's first line: nothing changed.
		u.First, f.looked = !f.looked, true
		return u
	case err != nil:
		u.Problems = f.once(fmt.Sprintf("warning: request log: %s", safeText(err.Error())))
		return u
	}
	stamp := stampOf(info)
	if f.looked && stamp == f.stamp {
		return u
	}
	recs, warns, err := f.log.Records(ctx)
	if err != nil {
		u.Problems = f.once("warning: " + safeText(err.Error()))
		return u
	}
	u.First, f.looked, f.stamp = !f.looked, true, stamp
	for _, w := range warns {
		// A warning quotes what it skipped, which anything that could
		// write the log chose.
		u.Problems = append(u.Problems, f.once(fmt.Sprintf("warning: %s: skipped %s", f.path, requests.Text(w.String())))...)
	}
	for _, r := range recs {
		was, seen := f.status[r.ID]
		f.status[r.ID] = r.Status
		switch {
		case !seen && (!u.First || r.Status == requests.StatusPending):
			u.Added = append(u.Added, r)
		case seen && was == requests.StatusPending && r.Status != requests.StatusPending:
			u.Decided = append(u.Decided, r)
		}
	}
	return u
}

// once returns s the first time it is given, nothing after.
func (f *follower) once(s string) []string {
	if f.said[s] {
		return nil
	}
	f.said[s] = true
	return []string{s}
}

func stampOf(info fs.FileInfo) fileStamp {
	s := fileStamp{size: info.Size(), mtime: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return s
}
