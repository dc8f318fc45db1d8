// Package introspect learns what a wrapped tool's subcommands and flags are
// from the tool's own help output, so the policy can type a flag (switch or
// value), describe it, and tell the assistant what it could ask for, without
// the operator writing it all down. Parsing one help text is helptext's job;
// this package decides which help texts to fetch and how, caches them, and
// puts the operator's overrides on top.
//
// # What runs
//
// A help is fetched only with fixed argument lists built from the config's
// binary and subcommand tokens; nothing an MCP client sent ever reaches them.
// For a subcommand sub…, in order, each form only while the earlier ones
// printed nothing parseable:
//
//	binary sub… --help
//	binary sub… -h       unless the root help lists -h as anything but help
//	binary help sub…     only when the root help lists (or points to) a help command
//
// The -h rule is stricter than "takes a value": psql's -h HOST would
// swallow the next word, and a switch such as --human-readable would run the
// subcommand for real.
//
// Never "binary sub… help": "git pull help" would pull from a remote named
// help. The root help (no subcommand) is fetched first, with "binary --help"
// then "binary -h", because it decides the two rules above; when it is not
// known, a subcommand gets only its --help form. Each run has its own empty
// temporary folder as working directory, the tool's isolated environment, a
// timeout (5 s) and an output cap (256 KiB per stream); a run that times out
// ends that subcommand's introspection. Stdout is parsed first, then stderr;
// the exit status does not matter (git's -h exits 129).
//
// Explore (for `config add`) walks the command tree instead: the root help,
// then each listed command's, then each group's commands, two levels deep,
// with the same forms, limits and cache, within a budget of help runs (100
// for config add) spent in sorted order so the outcome never depends on
// timing.
//
// # Cache
//
// A parsed help is cached on disk, one JSON file per (binary absolute path,
// binary size, binary modification time, subcommand) named by a SHA-256 of
// that key, and in memory. An entry older than the tool's TTL is fetched
// again; a binary whose size or modification time changed misses. An entry
// that is not a regular file of this user's, does not parse, does not match
// the key it was asked for, or holds a help listing nothing (which no fetch
// writes: a blanked file) counts as missing, with a warning; it is never
// read as a known help with no flags. Whoever can write the folder can still
// forge a help that lists something; keeping wrapped tools from writing it
// is confinement's job, not this package's. Failures are never written to
// disk, but are remembered in memory (keyed alike), so a reload does not run
// a broken help again until the binary changes or the caller forces a retry
// (SIGHUP). A failed refresh of a stale entry keeps the stale help: the
// binary is unchanged, so it is still the best answer.
//
// # Concurrency
//
// New starts nothing. An Introspector's Learn may be called from several
// goroutines; all its runs share one limit (4 help runs at once by default),
// each bounded by its timeout, and every run ends when Learn's context does.
// Loads (Learn, Explore) that ask for the same help at the same time share
// one run of it: the load that started the run owns it, a load that joined
// it and gives up only stops waiting, and when the owner gives up the run
// is killed and the loads still waiting run it again themselves.
// A Catalog is immutable once Learn returns it and safe for concurrent use; a
// nil *Catalog answers "unknown" to everything. Overrides are immutable once
// parsed.
package introspect
