package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wraptool/wraptool/policy"
	"github.com/wraptool/wraptool/policy/requests"
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

// promptMode is what the prompter's next key means.
type promptMode int

const (
	modeKey      promptMode = iota // one key decides (o, h, d, s)
	modeWord                       // a word is being typed (apply)
	modeReason                     // a denial's reason is being typed
	modeUnlisted                   // unlisted flags were accepted: o or h approves
)

// prompter is the interactive half of watch: it shows the pending
// requests one at a time, oldest first, each with its effect last, and
// turns the operator's keys into decisions. It runs on one goroutine, and
// only it (and its decider) writes to out.
type prompter struct {
	out, errs io.Writer
	decider   decider
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
	// hasUnlisted says cur has flags its help does not list, so its
	// prompt offers the word unlisted instead of o, h and apply.
	hasUnlisted bool
	// hasGrave says approving cur hands the assistant what can send the
	// credentials away with no pattern holding it; iKnow that the operator
	// typed i-know for it, which every approval of cur then carries.
	hasGrave, iKnow bool
}

func newPrompter(out, errs io.Writer, d decider, now func() time.Time) *prompter {
	return &prompter{out: out, errs: errs, decider: d, now: now, guard: keyGuard}
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
	p.decider.show(ctx, p.cur)
	p.hasUnlisted = p.decider.unlisted(ctx, p.cur) != ""
	p.hasGrave, p.iKnow = p.decider.grave(ctx, p.cur) != "", false
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
	if p.hasGrave && !p.iKnow {
		return promptGraveKeys + " "
	}
	if p.hasUnlisted {
		return promptUnlistedKeys + " "
	}
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
	case modeUnlisted:
		fmt.Fprint(p.out, unlistedPrompt)
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
		case modeUnlisted:
			p.unlistedKey(ctx, b)
		}
	}
	return false
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
	case modeUnlisted:
		fmt.Fprintln(p.out, "\n(not approved)")
		p.prompt()
	}
}

// key handles a key at the prompt.
func (p *prompter) key(ctx context.Context, b byte) {
	switch {
	case b == 'o':
		fmt.Fprintln(p.out, "o")
		p.decide(ctx, func(ctx context.Context) error {
			return p.decider.approve(ctx, p.cur, approval{grant: watchOnce, iKnow: p.iKnow})
		})
	case b == 'h':
		fmt.Fprintln(p.out, "h")
		p.decide(ctx, func(ctx context.Context) error {
			return p.decider.approve(ctx, p.cur, approval{grant: watchHour, iKnow: p.iKnow})
		})
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
		if w == "unlisted" {
			p.acceptUnlisted(ctx)
			return
		}
		if w == "i-know" {
			p.confirmGrave(ctx)
			return
		}
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
		p.decide(ctx, func(ctx context.Context) error {
			return p.decider.approve(ctx, p.cur, approval{apply: true, iKnow: p.iKnow})
		})
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

// acceptUnlisted follows the word unlisted: it prints the warning
// --unlisted-ok's refusal gives, then asks for o or h, with a first second
// of its own, so that approving flags the help does not list takes a word
// and a key typed after reading it.
func (p *prompter) acceptUnlisted(ctx context.Context) {
	warning := p.decider.unlisted(ctx, p.cur)
	if warning == "" {
		fmt.Fprintf(p.out, "every flag of %s is listed in its help: press o or h\n", requests.Token(p.cur.ID))
		p.hasUnlisted = false
		p.prompt()
		return
	}
	fmt.Fprintf(p.out, "warning: %s\n", safeText(warning))
	p.mode, p.buf = modeUnlisted, nil
	fmt.Fprint(p.out, unlistedPrompt)
	p.ignoreUntil = p.now().Add(p.guard)
}

// confirmGrave follows the word i-know: it prints what the operator
// confirms, then asks again with a first second of its own; every
// approval of the request then carries the confirmation.
func (p *prompter) confirmGrave(ctx context.Context) {
	warning := p.decider.grave(ctx, p.cur)
	if warning == "" {
		fmt.Fprintf(p.out, "nothing %s allows needs i-know\n", requests.Token(p.cur.ID))
		p.hasGrave = false
		p.prompt()
		return
	}
	fmt.Fprintf(p.out, "confirmed: %s\n", safeText(warning))
	p.iKnow = true
	p.show()
}

// unlistedKey handles a key once unlisted flags were accepted: o or h
// approves with them (as --unlisted-ok --once or --for 1h); other keys do
// nothing, Esc goes back.
func (p *prompter) unlistedKey(ctx context.Context, b byte) {
	var term *requests.Term
	switch b {
	case 'o':
		term = watchOnce
	case 'h':
		term = watchHour
	default:
		return
	}
	fmt.Fprintf(p.out, "%c\n", b)
	p.decide(ctx, func(ctx context.Context) error {
		return p.decider.approve(ctx, p.cur, approval{grant: term, unlistedOK: true, iKnow: p.iKnow})
	})
}

// reason handles a key while a denial's reason is typed. The reason is the
// operator's own text, echoed as typed but for control characters.
func (p *prompter) reason(ctx context.Context, b byte) {
	switch {
	case b == '\r' || b == '\n':
		reason := strings.TrimSpace(string(p.buf))
		p.mode, p.buf = modeKey, nil
		fmt.Fprintln(p.out)
		p.decide(ctx, func(ctx context.Context) error { return p.decider.deny(ctx, p.cur, reason) })
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
		// What was confirmed was the effect shown before.
		p.hasUnlisted = p.decider.unlisted(ctx, p.cur) != ""
		p.hasGrave, p.iKnow = p.decider.grave(ctx, p.cur) != "", false
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
