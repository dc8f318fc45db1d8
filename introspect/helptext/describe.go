package helptext

import (
	"strings"

	"github.com/wraptool/wraptool/policy"
)

// maxDescribeParagraphs bounds how far describe looks for a summary: it
// comes before the lists, or not at all.
const maxDescribeParagraphs = 8

// describe finds the command's one-line summary: the first sentence of the
// first plain paragraph at the margin before any list, or of the lines
// right after a usage line (GNU's "Usage: ls …" / "List information about
// …"), or (afterUsage) of the paragraph after a one-line usage. A usage line
// itself, a paragraph ending in ':' and anything indented are never a
// summary.
func describe(lines []line, cfg config) string {
	if cfg.man {
		return manName(lines)
	}
	seen := 0
	for i := 0; i < len(lines) && seen < maxDescribeParagraphs; {
		for i < len(lines) && lines[i].text == "" {
			i++
		}
		start := i
		for i < len(lines) && lines[i].text != "" {
			i++
		}
		if start == i {
			break
		}
		seen++
		para := lines[start:i]
		if para[0].indent > 0 {
			return ""
		}
		u := -1
		for k, ln := range para {
			if ln.indent == 0 && hasPrefixFold(ln.text, "usage:") {
				u = k
				break
			}
		}
		switch {
		case u > 0:
			// A summary above the usage line (wget, psql).
			if s := summary(para[:u]); s != "" {
				return s
			}
			return ""
		case u == 0:
			if strings.TrimSpace(para[0].text[len("usage:"):]) == "" {
				return "" // Cobra's "Usage:" heading: the lists have begun
			}
			// Usage continuation lines are indented or start with "or:";
			// the first line back at the margin starts the summary.
			k := 1
			for k < len(para) && (para[k].indent > 0 || hasPrefixFold(para[k].text, "or:")) {
				k++
			}
			end := k
			for end < len(para) && para[end].indent == 0 && !strings.HasSuffix(para[end].text, ":") {
				end++
			}
			if s := summary(para[k:end]); s != "" {
				return s
			}
			// argparse (lower-case "usage:") puts the summary in the next
			// paragraph; GNU's next paragraph is about the listing
			// (terraform's "The available commands … are listed below").
			if !cfg.afterUsage && !strings.HasPrefix(para[0].text, "usage:") {
				return ""
			}
			continue
		}
		if strings.HasSuffix(para[len(para)-1].text, ":") {
			continue // "These are common Git commands used in various situations:"
		}
		if isPointer(para[0].text) || (len(para) == 1 && isSynopsis(para[0].text)) {
			continue // "See 'git help <command>' to read about …", "systemctl [OPTIONS...] COMMAND ..."
		}
		return summary(para)
	}
	return ""
}

// isPointer reports whether a paragraph sends the reader elsewhere rather
// than saying what the command does.
func isPointer(text string) bool {
	for _, p := range []string{"See ", "Use ", "Run ", "Type ", "For more", "For help"} {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}

// isSynopsis reports whether a line is a usage synopsis printed without
// "Usage:" (systemctl's "systemctl [OPTIONS...] COMMAND ...").
func isSynopsis(text string) bool {
	for _, m := range []string{"[OPTION", "[option", "[flags]", "[FLAGS]", "<command>", " COMMAND"} {
		if strings.Contains(text, m) {
			return true
		}
	}
	return false
}

// summary is the first sentence of lines, which must all be at the margin.
func summary(lines []line) string {
	parts := make([]string, 0, len(lines))
	for _, ln := range lines {
		if ln.indent > 0 {
			return ""
		}
		parts = append(parts, ln.text)
	}
	return firstSentence(oneLine(parts))
}

// manName reads a man page's NAME section, "git-pull - Fetch from and
// integrate …", without the name.
func manName(lines []line) string {
	for i, ln := range lines {
		if ln.indent != 0 || ln.text != "NAME" {
			continue
		}
		var parts []string
		for _, next := range lines[i+1:] {
			if next.text == "" || next.indent == 0 {
				if len(parts) > 0 || next.indent == 0 && next.text != "" {
					break
				}
				continue
			}
			parts = append(parts, next.text)
		}
		s := oneLine(parts)
		for _, sep := range []string{" - ", " — ", " -- "} {
			if _, after, ok := strings.Cut(s, sep); ok {
				return firstSentence(after)
			}
		}
		return firstSentence(s)
	}
	return ""
}

// mentionsHelp reports whether the text tells the reader to run
// "<program> help …", the program being the one its usage line names.
func mentionsHelp(lines []line) bool {
	prog := program(lines)
	if prog == "" {
		return false
	}
	needle := prog + " help"
	for _, ln := range lines {
		t := ln.text
		for off := 0; ; {
			j := strings.Index(t[off:], needle)
			if j < 0 {
				break
			}
			j += off
			end := j + len(needle)
			before := j == 0 || strings.IndexByte(" '\"`(", t[j-1]) >= 0
			after := end == len(t) || strings.IndexByte(" '\"`).", t[end]) >= 0
			if before && after {
				return true
			}
			off = j + 1
		}
	}
	return false
}

// program is the command the first usage line names ("usage: git …",
// Cobra's "Usage:" with the command on the next line), or "".
func program(lines []line) string {
	for i, ln := range lines {
		if !hasPrefixFold(ln.text, "usage:") {
			continue
		}
		rest := strings.TrimSpace(ln.text[len("usage:"):])
		if rest == "" {
			for _, next := range lines[i+1:] {
				if next.text != "" {
					rest = next.text
					break
				}
			}
		}
		tok, _, _ := strings.Cut(rest, " ")
		if k := strings.LastIndexByte(tok, '/'); k >= 0 {
			tok = tok[k+1:]
		}
		if policy.ValidToken(tok) {
			return tok
		}
		return ""
	}
	return ""
}

// detect picks the style to read lines as.
//
//   - A man page has NAME and SYNOPSIS, DESCRIPTION or OPTIONS headings.
//   - Git's parse-options starts "usage: git …" (lower case), or lowercase
//     "usage:" with every option line indented four spaces.
//   - Cobra has its headings ("Available Commands:", "Flags:", "Global
//     Flags:", "Aliases:", capitalized "… Commands:") or kubectl's
//     "--name=default:" option lines.
//   - Anything else is GNU (which also reads what has no structure at all;
//     Parse falls back when it finds nothing).
func detect(lines []line) string {
	var name, manSection, cobra bool
	first := ""
	indent4, otherIndent := 0, 0
	for _, ln := range lines {
		if ln.text == "" {
			continue
		}
		if first == "" {
			first = ln.text
		}
		if ln.indent == 0 {
			switch ln.text {
			case "NAME":
				name = true
			case "SYNOPSIS", "DESCRIPTION", "OPTIONS":
				manSection = true
			case "Available Commands:", "Flags:", "Global Flags:", "Aliases:", "Additional help topics:":
				cobra = true
			}
			if strings.HasSuffix(ln.text, ":") && strings.Contains(ln.text, "Commands") {
				cobra = true
			}
			continue
		}
		if ln.text[0] != '-' {
			continue
		}
		sp, ok := parseSpec(ln.text, specStrict)
		if !ok {
			continue
		}
		if ln.indent == 4 {
			indent4++
		} else {
			otherIndent++
		}
		for _, sg := range sp.spellings {
			if sg.kubectl && sg.value != ValueUnknown {
				cobra = true
			}
		}
	}
	switch {
	case name && manSection:
		return styleMan
	case strings.HasPrefix(first, "usage: "):
		prog, _, _ := strings.Cut(strings.TrimPrefix(first, "usage: "), " ")
		if prog == "git" || strings.HasPrefix(prog, "git-") || (indent4 > 0 && otherIndent == 0) {
			return StyleGit
		}
	}
	if cobra {
		return StyleCobra
	}
	return StyleGNU
}
