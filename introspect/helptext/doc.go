// Package helptext reads the help text a command-line tool prints about
// itself (`git pull -h`, `kubectl get --help`, `ls --help`, a man page) and
// says what it lists: the tool's subcommands, its flags, whether each flag
// takes a value, and a one-line description of each.
//
// wraptool learns a wrapped tool's flags from that text instead of from a
// hand-written table, so that a schema says `--depth` takes a value and
// `--verbose` does not, and so that a flag the operator allows is described in
// the tool's own words. The text is written for people, so everything here is
// a careful guess: the parsers prefer to leave a flag's value-taking unknown
// (and let the policy's name heuristic decide) over inventing one, and they
// skip what they cannot read rather than fail.
//
// Four layouts are recognized: Git's parse-options (`usage: git …` with
// four-space option lines), Cobra/pflag (kubectl, docker, gh and the like,
// including kubectl's `--name=default:` form), GNU (`ls --help`, `tar
// --help`, curl, wget, and man pages, which Parse reads as GNU), and a
// conservative fallback that takes any line starting with a flag. Parse
// detects the layout; a text mixing features of several is read by the
// detected one, which understands every option-line form.
//
// Known misreadings, each the text's ambiguity rather than a bug to chase:
// flags that appear only in a usage synopsis (git's root "[-C <path>]",
// "git stash -h") are not read; in a man-page line listing several
// spellings the first short pairs with the first long ("--stat, -n,
// --no-stat" pairs -n with --stat); a help text that misstates a flag
// (wget's "--max-redirect" without its value) is believed; options at the
// left margin are only read by the fallback; only the first paragraph of a
// man page's option description is kept.
//
// The package does no I/O and starts no goroutines; every function is a pure
// function of its input and safe for concurrent use. Parse is linear in the
// size of its input (it reads at most MaxInput bytes) and gives up quickly on
// binary data.
package helptext
