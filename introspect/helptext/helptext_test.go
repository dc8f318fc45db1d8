package helptext

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/wraptool/wraptool/policy"
)

// Shorthands for the tables.
const (
	tBool = policy.TypeBoolean
	tInt  = policy.TypeInteger
	tStr  = policy.TypeString
	tUnk  = policy.TypeUnknown
)

// textCase is what one help text must yield. Flags and subcommands are
// selected ones, looked up by their first spelling; want flags are compared
// whole.
type textCase struct {
	file        string // under testdata/ (captured texts)
	name        string // what a synthetic text shows
	text        string // a synthetic text
	style       string
	description string
	subs        []Subcommand
	noSubs      []string // names that must not be listed
	flags       []Flag
	noFlags     []string // spellings that must not be found
	shortTaken  bool
	shortReused bool
	helpCommand bool // HasSubcommand("help")
}

func TestParseCapturedTexts(t *testing.T) {
	cases := []textCase{
		{
			file:  "git_pull_h.txt",
			style: StyleGit,
			flags: []Flag{
				{Short: "-v", Long: "--verbose", Value: ValueNone, Type: tBool, Description: "be more verbose"},
				{Long: "--recurse-submodules", Value: ValueOptional, Placeholder: "<on-demand>", Type: tBool, Description: "control for recursive fetching of submodules"},
				{Short: "-r", Long: "--rebase", Value: ValueOptional, Placeholder: "(false|true|merges|interactive)", Type: tBool, Description: "incorporate changes by rebasing rather than merging"},
				{Short: "-n", Value: ValueNone, Type: tBool, Description: "do not show a diffstat at the end of the merge"},
				{Long: "--log", Value: ValueOptional, Placeholder: "<n>", Type: tBool, Description: "add (at most <n>) entries from shortlog to merge commit message"},
				{Long: "--cleanup", Value: ValueRequired, Placeholder: "<mode>", Type: tStr, Description: "how to strip spaces and #comments from message"},
				{Short: "-s", Long: "--strategy", Value: ValueRequired, Placeholder: "<strategy>", Type: tStr, Description: "merge strategy to use"},
				{Short: "-X", Long: "--strategy-option", Value: ValueRequired, Placeholder: "<option=value>", Type: tStr, Description: "option for selected merge strategy"},
				{Short: "-S", Long: "--gpg-sign", Value: ValueOptional, Placeholder: "<key-id>", Type: tBool, Description: "GPG sign commit"},
				{Long: "--depth", Value: ValueRequired, Placeholder: "<depth>", Type: tStr, Description: "deepen history of shallow clone"},
				{Long: "--deepen", Value: ValueRequired, Placeholder: "<n>", Type: tInt, Description: "deepen history of shallow clone"},
				{Short: "-j", Long: "--jobs", Value: ValueOptional, Placeholder: "<n>", Type: tBool, Description: "number of submodules pulled in parallel"},
				{Short: "-4", Long: "--ipv4", Value: ValueNone, Type: tBool, Description: "use IPv4 addresses only"},
				{Long: "--set-upstream", Value: ValueNone, Type: tBool, Description: "set upstream for git pull/fetch"},
			},
			noFlags: []string{"-h", "--help", "--no-verify"},
		},
		{
			file:  "git_commit_h.txt",
			style: StyleGit,
			flags: []Flag{
				{Short: "-m", Long: "--message", Value: ValueRequired, Placeholder: "<message>", Type: tStr, Description: "commit message"},
				{Short: "-F", Long: "--file", Value: ValueRequired, Placeholder: "<file>", Type: tStr, Description: "read message from file"},
				{Long: "--fixup", Value: ValueRequired, Placeholder: "[(amend|reword):]commit", Type: tStr, Description: "use autosquash formatted message to fixup or amend/reword specified commit"},
				{Short: "-n", Long: "--no-verify", Value: ValueNone, Type: tBool, Description: "bypass pre-commit and commit-msg hooks"},
				{Short: "-u", Long: "--untracked-files", Value: ValueOptional, Placeholder: "<mode>", Type: tBool, Description: "show untracked files, optional modes: all, normal, no. (Default: all)"},
				{Long: "--pathspec-file-nul", Value: ValueNone, Type: tBool, Description: "with --pathspec-from-file, pathspec elements are separated with NUL character"},
			},
			// The usage block's "[--dry-run]" and "[-S[<keyid>]]" are not option lines.
			noFlags: []string{"--reset-author]", "-h"},
		},
		{
			file:  "git_help.txt",
			style: StyleGit,
			subs: []Subcommand{
				{Name: "clone", Description: "Clone a repository into a new directory"},
				{Name: "pull", Description: "Fetch from and integrate with another repository or a local branch"},
				{Name: "tag", Description: "Create, list, delete or verify a tag object signed with GPG"},
			},
			noSubs:      []string{"usage", "or", "start", "These", "'git", "concept"},
			helpCommand: true,
		},
		{
			file: "git_help_a.txt",
			subs: []Subcommand{
				{Name: "cherry-pick", Description: "Apply the changes introduced by some existing commits"},
				{Name: "help", Description: "Display help information about Git"},
				{Name: "update-server-info", Description: "Update auxiliary info file to help dumb servers"},
			},
			noSubs:      []string{"credential-gcloud.sh", "See"},
			helpCommand: true,
		},
		{
			// git's man-page forms: "-m <msg>, --message=<msg>",
			// "-n, --[no-]verify", "-S[<keyid>], --gpg-sign[=<keyid>]".
			file:        "git_commit_help_man.txt",
			style:       StyleGNU,
			description: "Record changes to the repository",
			flags: []Flag{
				{Short: "-m", Long: "--message", Value: ValueRequired, Placeholder: "<msg>", Type: tStr, Description: "Use the given <msg> as the commit message. If multiple -m options are given, their values are concatenated as separate paragraphs."},
				{Long: "--allow-empty", Value: ValueNone, Type: tBool, Description: "Usually recording a commit that has the exact same tree as its sole parent commit is a mistake, and the command prevents you from making such a commit. This option bypasses the safety, and is primarily for use by foreign SCM interface scripts."},
				{Short: "-n", Long: "--verify", Value: ValueNone, Type: tBool, Description: "By default, the pre-commit and commit-msg hooks are run. When any of --no-verify or -n is given, these are bypassed. See also githooks(5).", Negatable: true},
				{Long: "--cleanup", Value: ValueRequired, Placeholder: "<mode>", Type: tStr, Description: "This option determines how the supplied commit message should be cleaned up before committing. The <mode> can be strip, whitespace, verbatim, scissors or default."},
				{Long: "--status", Value: ValueNone, Type: tBool, Description: "Include the output of git-status(1) in the commit message template when using an editor to prepare the commit message. Defaults to on, but can be used to override configuration variable commit.status."},
				{Short: "-S", Long: "--gpg-sign", Value: ValueOptional, Placeholder: "<keyid>", Type: tBool, Description: "GPG-sign commits. The keyid argument is optional and defaults to the committer identity; if specified, it must be stuck to the option without a space. --no-gpg-sign is useful to countermand both commit.gpgSign configuration variable, and earlier --gpg-sign.", Negatable: true},
			},
			noFlags: []string{"--reset-author]", "--[no-]status"},
		},
		{
			// Nested optional values ("--stat[=<width>[,<name-width>[,<count>]]]"),
			// options under DIFF FORMATTING, "-<number>, -n <number>,
			// --max-count=<number>", "--[no-]mailmap, --[no-]use-mailmap", and
			// -L's values with commas and colons stuck to it, whose
			// description's "--numstat, --shortstat, --dirstat" is prose.
			file:        "git_log_help_man.txt",
			style:       StyleGNU,
			description: "Show commit logs",
			flags: []Flag{
				{Long: "--stat", Value: ValueOptional, Placeholder: "<width>[,<name-width>[,<count>]]", Type: tBool, Description: "Generate a diffstat. By default, as much space as necessary will be used for the filename part, and the rest for the graph part. Maximum width defaults to terminal width, or 80 columns if not connected to a terminal, and can be overridden by <width>. The width of the filename part can be limited by giving another width <name-width> after a comma. The width of the graph part can be limited by using --stat-graph-width=<width> (affects all commands generating a stat graph) or by setting diff.statGraphWidth=<width> (does not affect git format-patch). By giving a third parameter <count>, you can limit the output to the first <count> lines, followed by ... if there are more."},
				{Short: "-X", Long: "--dirstat", Value: ValueOptional, Placeholder: "<param1,param2,...>", Type: tBool, Description: "Output the distribution of relative amount of changes for each sub-directory. The behavior of --dirstat can be customized by passing it a comma separated list of parameters. The defaults are controlled by the diff.dirstat configuration variable (see git-config(1)). The following parameters are available:"},
				{Short: "-n", Long: "--max-count", Value: ValueRequired, Placeholder: "<number>", Type: tInt, Description: "Limit the number of commits to output."},
				{Long: "--mailmap", Value: ValueNone, Type: tBool, Description: "Use mailmap file to map author and committer names and email addresses to canonical real names and email addresses. See git-shortlog(1).", Negatable: true},
				{Long: "--use-mailmap", Value: ValueNone, Type: tBool, Description: "Use mailmap file to map author and committer names and email addresses to canonical real names and email addresses. See git-shortlog(1).", Negatable: true},
				{Short: "-L", Value: ValueRequired, Placeholder: "<start>,<end>:<file>", Type: tStr, Description: "Trace the evolution of the line range given by <start>,<end>, or by the function name regex <funcname>, within the <file>. You may not give any pathspec limiters. This is currently limited to a walk starting from a single revision, i.e., you may only give zero or one positive revision arguments, and <start> and <end> (or <funcname>) must exist in the starting revision. You can specify this option more than once. Implies --patch. Patch output can be suppressed using --no-patch, but other diff formats (namely --raw, --numstat, --shortstat, --dirstat, --summary, --name-only, --name-status, --check) are not currently implemented."},
				{Long: "--follow", Value: ValueNone, Type: tBool, Description: "Continue listing the history of a file beyond renames (works only for a single file)."},
				{Long: "--rename-empty", Value: ValueNone, Type: tBool, Description: "Whether to use empty blobs as rename source.", Negatable: true},
				{Long: "--skip", Value: ValueRequired, Placeholder: "<number>", Type: tInt, Description: "Skip number commits before starting to show the commit output."},
			},
			noFlags: []string{"--stat-graph-width=<width>", "<path>..."},
		},
		{
			file:        "git_pull_help_man.txt",
			style:       StyleGNU,
			description: "Fetch from and integrate with another repository or a local branch",
			flags: []Flag{
				{Short: "-q", Long: "--quiet", Value: ValueNone, Type: tBool, Description: "This is passed to both underlying git-fetch to squelch reporting of during transfer, and underlying git-merge to squelch output during merging."},
				{Long: "--recurse-submodules", Value: ValueOptional, Placeholder: "yes|on-demand|no", Type: tBool, Negatable: true, Description: "This option controls if new commits of populated submodules should be fetched, and if the working trees of active submodules should be updated, too (see git-fetch(1), git-config(1) and gitmodules(5))."},
				{Short: "-e", Long: "--edit", Value: ValueNone, Type: tBool, Negatable: true, Description: "Invoke an editor before committing successful mechanical merge to further edit the auto-generated merge message, so that the user can explain and justify the merge. The --no-edit option can be used to accept the auto-generated message (this is generally discouraged)."},
				{Short: "-S", Long: "--gpg-sign", Value: ValueOptional, Placeholder: "<keyid>", Type: tBool, Negatable: true, Description: "GPG-sign the resulting merge commit. The keyid argument is optional and defaults to the committer identity; if specified, it must be stuck to the option without a space. --no-gpg-sign is useful to countermand both commit.gpgSign configuration variable, and earlier --gpg-sign."},
				{Long: "--verify", Value: ValueNone, Type: tBool, Negatable: true, Description: "By default, the pre-merge and commit-msg hooks are run. When --no-verify is given, these are bypassed. See also githooks(5). Only useful when merging."},
				{Short: "-s", Long: "--strategy", Value: ValueRequired, Placeholder: "<strategy>", Type: tStr, Description: "Use the given merge strategy; can be supplied more than once to specify them in the order they should be tried. If there is no -s option, a built-in list of strategies is used instead (ort when merging a single head, octopus otherwise)."},
				{Short: "-r", Long: "--rebase", Value: ValueOptional, Placeholder: "false|true|merges|interactive", Type: tBool, Description: "When true, rebase the current branch on top of the upstream branch after fetching. If there is a remote-tracking branch corresponding to the upstream branch and the upstream branch was rebased since last fetched, the rebase uses that information to avoid rebasing non-local changes."},
				{Long: "--no-rebase", Value: ValueNone, Type: tBool, Description: "This is shorthand for --rebase=false."},
				{Long: "--all", Value: ValueNone, Type: tBool, Description: "Fetch all remotes."},
				{Long: "--depth", Value: ValueRequired, Placeholder: "<depth>", Type: tStr, Description: "Limit fetching to the specified number of commits from the tip of each remote branch history. If fetching to a shallow repository created by git clone with --depth=<depth> option (see git-clone(1)), deepen or shorten the history to the specified number of commits. Tags for the deepened commits are not fetched."},
				{Short: "-j", Long: "--jobs", Value: ValueRequired, Placeholder: "<n>", Type: tInt, Description: "Number of parallel children to be used for all forms of fetching."},
			},
			// Prose mentioning flags is not an option line.
			noFlags: []string{"--merge", "--no-commit-x", "--rebase-merges"},
		},
		{
			file:        "gcloud_help.txt",
			style:       StyleGNU,
			description: "manage Google Cloud resources and developer workflow",
			subs: []Subcommand{
				{Name: "access-approval", Description: "Manage Access Approval requests and settings."},
				{Name: "compute", Description: "Create and manipulate Compute Engine resources."},
				{Name: "help", Description: "Search gcloud help text."},
			},
			noSubs: []string{"GROUP", "COMMAND", "gcloud"},
			flags: []Flag{
				{Long: "--account", Value: ValueRequired, Placeholder: "ACCOUNT", Type: tStr, Description: "Google Cloud user account to use for invocation. Overrides the default core/account property value for this command invocation."},
				{Long: "--flatten", Value: ValueRequired, Placeholder: "[KEY,...]", Type: tStr, Description: "Flatten name[] output resource slices in KEY into separate records for each item in each slice. Multiple keys and slices may be specified. This also flattens keys for --format and --filter. For example, --flatten=abc.def flattens abc.def[].ghi references to abc.def.ghi. A resource record containing abc.def[] with N elements will expand to N records in the flattened output. This allows us to specify what resource-key the filter will operate on. This flag interacts with other flags that are applied in this order: --flatten, --sort-by, --filter, --limit."},
				{Short: "-q", Long: "--quiet", Value: ValueNone, Type: tBool, Description: "Disable all interactive prompts when running gcloud commands. If input is required, defaults will be used, or an error will be raised."},
				{Long: "--verbosity", Value: ValueRequired, Placeholder: "VERBOSITY", Type: tStr, Description: "Override the default verbosity for this command. Overrides the default core/verbosity property value for this command invocation. VERBOSITY must be one of: debug, info, warning, error, critical, none."},
				{Short: "-h", Value: ValueNone, Type: tBool, Description: "Print a summary help and exit."},
			},
			noFlags:     []string{"--billing-project takes precedence", "--impersonate-service-account="},
			helpCommand: true,
		},
		{
			file:        "kubectl_help.txt",
			style:       StyleCobra,
			description: "kubectl controls the Kubernetes cluster manager.",
			subs: []Subcommand{
				{Name: "create", Description: "Create a resource from a file or from stdin"},
				{Name: "get", Description: "Display one or many resources"},
				{Name: "cluster-info", Description: "Display cluster information"},
				{Name: "version", Description: "Print the client and server version information"},
			},
			noSubs: []string{"kubectl", "help", "Find"},
		},
		{
			file:        "kubectl_get_help.txt",
			style:       StyleCobra,
			description: "Display one or many resources.",
			flags: []Flag{
				{Short: "-A", Long: "--all-namespaces", Value: ValueNone, Type: tBool, Default: "false", Description: "If present, list the requested object(s) across all namespaces. Namespace in current context is ignored even if specified with --namespace."},
				{Long: "--chunk-size", Value: ValueRequired, Type: tInt, Default: "500", Description: "Return large lists in chunks rather than all at once. Pass 0 to disable. This flag is beta and may change in the future."},
				{Short: "-f", Long: "--filename", Value: ValueRequired, Type: tStr, Default: "[]", Description: "Filename, directory, or URL to files identifying the resource to get from a server."},
				{Short: "-o", Long: "--output", Value: ValueRequired, Type: tStr, Default: "''", Description: "Output format. One of: (json, yaml, name, go-template, go-template-file, template, templatefile, jsonpath, jsonpath-as-json, jsonpath-file, custom-columns, custom-columns-file, wide). See custom columns [https://kubernetes.io/docs/reference/kubectl/#custom-columns], golang template [http://golang.org/pkg/text/template/#pkg-overview] and jsonpath template [https://kubernetes.io/docs/reference/kubectl/jsonpath/]."},
				{Long: "--server-print", Value: ValueNone, Type: tBool, Default: "true", Description: "If true, have the server return the appropriate table output. Supports extension APIs and CRDs."},
				{Short: "-w", Long: "--watch", Value: ValueNone, Type: tBool, Default: "false", Description: "After listing/getting the requested object, watch for changes."},
			},
			// Example command lines are not options.
			noFlags: []string{"-h", "--template={{.status.phase}}", "--subresource status"},
		},
		{
			file:        "docker_help.txt",
			style:       StyleCobra,
			description: "A self-sufficient runtime for containers",
			subs: []Subcommand{
				{Name: "run", Description: "Create and run a new container from an image"},
				{Name: "builder", Description: "Manage builds"},
				{Name: "swarm", Description: "Manage Swarm"},
				{Name: "wait", Description: "Block until one or more containers stop, then print their exit codes"},
			},
			flags: []Flag{
				{Long: "--config", Value: ValueRequired, Placeholder: "string", Type: tStr, Description: `Location of client config files (default "/tmp/hthome/.docker")`},
				{Short: "-H", Long: "--host", Value: ValueRequired, Placeholder: "list", Type: tStr, Description: "Daemon socket to connect to"},
				{Short: "-D", Long: "--debug", Value: ValueNone, Type: tBool, Description: "Enable debug mode"},
				{Long: "--tlsverify", Value: ValueNone, Type: tBool, Description: "Use TLS and verify the remote"},
			},
		},
		{
			file:  "kpt_help.txt",
			style: StyleCobra,
			subs: []Subcommand{
				{Name: "fn", Description: "Transform and validate packages using containerized functions."},
				{Name: "help", Description: "Help about any command"},
			},
			flags: []Flag{
				{Short: "-h", Long: "--help", Value: ValueNone, Type: tBool, Description: "help for kpt"},
				{Long: "--log-flush-frequency", Value: ValueRequired, Placeholder: "duration", Type: tStr, Description: "Maximum number of seconds between log flushes (default 5s)"},
				{Short: "-v", Long: "--v", Value: ValueRequired, Placeholder: "Level", Type: tStr, Description: "number for the log level verbosity"},
			},
			noSubs:      []string{"kpt", "Group"},
			helpCommand: true,
		},
		{
			file:        "kpt_live_apply_help.txt",
			style:       StyleCobra,
			description: "Apply a package to the cluster (create, update, prune).",
			flags: []Flag{
				// Listed twice: the notes ("--dry-run:") leave the value
				// unknown, the pflag table settles it.
				{Long: "--dry-run", Value: ValueNone, Type: tBool, Description: "It true, kpt will validate the resources in the package and print which resources will be applied and which resources will be pruned, but no resources will be changed. If the --server-side flag is true, kpt will do a server-side dry-run, otherwise it will be a client-side dry-run. Note that the output will differ somewhat between the two alternatives."},
				{Long: "--prune-timeout", Value: ValueRequired, Placeholder: "duration", Type: tStr, Description: "The threshold for how long to wait for all pruned resources to be deleted before giving up. If this flag is not set, kpt live apply will wait until interrupted. In most cases, it would also make sense to set the --prune-propagation-policy to Foreground when this flag is set."},
				{Long: "--status-policy", Value: ValueRequired, Placeholder: "string", Type: tStr, Description: `It determines which status information should be saved in the inventory (if compatible). Available options "all" and "none". (default "all")`},
				{Short: "-n", Long: "--namespace", Value: ValueRequired, Placeholder: "string", Type: tStr, Description: "If present, the namespace scope for this CLI request"},
			},
			noFlags: []string{"--reconcile-timeout=15m"},
		},
		{
			file:        "ls_help.txt",
			style:       StyleGNU,
			description: "List information about the FILEs (the current directory by default).",
			flags: []Flag{
				{Short: "-a", Long: "--all", Value: ValueNone, Type: tBool, Description: "do not ignore entries starting with ."},
				{Long: "--block-size", Value: ValueRequired, Placeholder: "SIZE", Type: tStr, Description: "with -l, scale sizes by SIZE when printing them; e.g., '--block-size=M'; see SIZE format below"},
				{Long: "--color", Value: ValueOptional, Placeholder: "WHEN", Type: tBool, Description: "color the output WHEN; more info below"},
				{Short: "-T", Long: "--tabsize", Value: ValueRequired, Placeholder: "COLS", Type: tStr, Description: "assume tab stops at each COLS instead of 8"},
				{Short: "-c", Value: ValueNone, Type: tBool, Description: "with -lt: sort by, and show, ctime (time of last modification of file status information); with -l: show ctime and sort by name; otherwise: sort by ctime, newest first"},
				{Short: "-h", Long: "--human-readable", Value: ValueNone, Type: tBool, Description: "with -l and -s, print sizes like 1K 234M 2G etc."},
				{Short: "-p", Value: ValueNone, Type: tBool, Description: "append / indicator to directories"},
				{Long: "--indicator-style", Value: ValueRequired, Placeholder: "WORD", Type: tStr, Description: "append indicator with style WORD to entry names: none (default), slash (-p), file-type (--file-type), classify (-F)"},
				{Short: "-1", Value: ValueNone, Type: tBool, Description: "list one file per line"},
				{Long: "--help", Value: ValueNone, Type: tBool, Description: "display this help and exit"},
			},
			shortReused: true,
		},
		{
			file:        "tar_help.txt",
			style:       StyleGNU,
			description: "GNU 'tar' saves many files together into a single tape or disk archive, and can restore individual files from the archive.",
			flags: []Flag{
				{Short: "-f", Long: "--file", Value: ValueRequired, Placeholder: "ARCHIVE", Type: tStr, Description: "use archive file or device ARCHIVE"},
				{Short: "-A", Long: "--catenate", Value: ValueNone, Type: tBool, Description: "append tar files to an archive"},
				{Long: "--concatenate", Value: ValueNone, Type: tBool, Description: "append tar files to an archive"},
				{Long: "--exclude-caches-under", Value: ValueNone, Type: tBool, Description: "exclude everything under directories containing CACHEDIR.TAG"},
				{Long: "--exclude-tag-all", Value: ValueRequired, Placeholder: "FILE", Type: tStr, Description: "exclude directories containing FILE"},
				{Long: "--level", Value: ValueRequired, Placeholder: "NUMBER", Type: tInt, Description: "dump level for created listed-incremental archive"},
				{Long: "--occurrence", Value: ValueOptional, Placeholder: "NUMBER", Type: tBool, Description: "process only the NUMBERth occurrence of each file in the archive; this option is valid only in conjunction with one of the subcommands --delete, --diff, --extract or --list and when a list of files is given either on the command line or via the -T option; NUMBER defaults to 1"},
				{Long: "--ungzip", Value: ValueNone, Type: tBool, Description: "filter the archive through gzip"},
				{Long: "--pax-option", Value: ValueRequired, Placeholder: "keyword[[:]=value][,keyword[[:]=value]]...", Type: tStr, Description: "control pax keywords"},
				{Short: "-o", Value: ValueNone, Type: tBool, Description: "when creating, same as --old-archive; when extracting, same as --no-same-owner"},
			},
			noFlags:     []string{"-?", "--sparse)"},
			noSubs:      []string{"gnu", "none"},
			shortReused: true, // -h, --dereference
		},
		{
			file:        "wget_help.txt",
			style:       StyleGNU,
			description: "GNU Wget 1.21.3, a non-interactive network retriever.",
			flags: []Flag{
				{Short: "-V", Long: "--version", Value: ValueNone, Type: tBool, Description: "display the version of Wget and exit"},
				{Short: "-o", Long: "--output-file", Value: ValueRequired, Placeholder: "FILE", Type: tStr, Description: "log messages to FILE"},
				{Long: "--no-verbose", Value: ValueNone, Type: tBool, Description: "turn off verboseness, without being quiet"},
				{Short: "-t", Long: "--tries", Value: ValueRequired, Placeholder: "NUMBER", Type: tInt, Description: "set number of retries to NUMBER (0 unlimits)"},
				{Long: "--backups", Value: ValueRequired, Placeholder: "N", Type: tInt, Description: "before writing file X, rotate up to N backup files"},
				{Short: "-B", Long: "--base", Value: ValueRequired, Placeholder: "URL", Type: tStr, Description: "resolves HTML input-file links (-i -F) relative to URL"},
			},
			noFlags: []string{"-nv", "-nc"},
		},
		{
			file:  "curl_help_all.txt",
			style: StyleGNU,
			flags: []Flag{
				{Short: "-d", Long: "--data", Value: ValueRequired, Placeholder: "<data>", Type: tStr, Description: "HTTP POST data"},
				{Long: "--alt-svc", Value: ValueRequired, Placeholder: "<file name>", Type: tStr, Description: "Enable alt-svc with this cache file"},
				{Long: "--aws-sigv4", Value: ValueRequired, Placeholder: "<provider1[:provider2[:region[:service]]]>", Type: tStr, Description: "Use AWS V4 signature authentication"},
				{Long: "--max-redirs", Value: ValueRequired, Placeholder: "<num>", Type: tInt, Description: "Maximum number of redirects allowed"},
				{Short: "-a", Long: "--append", Value: ValueNone, Type: tBool, Description: "Append to target file when uploading"},
				{Short: "-h", Long: "--help", Value: ValueRequired, Placeholder: "<category>", Type: tStr, Description: "Get help for commands"},
			},
			// curl's help says "-h, --help <category>": by the text, -h
			// takes a value (curl itself treats it as optional), so
			// "curl -h" is not tried; "curl --help" comes first anyway.
			shortTaken:  true,
			shortReused: true,
		},
		{
			file:        "psql_help.txt",
			style:       StyleGNU,
			description: "psql is the PostgreSQL interactive terminal.",
			flags: []Flag{
				{Short: "-h", Long: "--host", Value: ValueRequired, Placeholder: "HOSTNAME", Type: tStr, Description: `database server host or socket directory (default: "/var/run/postgresql")`},
				{Short: "-v", Long: "--set", Value: ValueRequired, Placeholder: "NAME=VALUE", Type: tStr, Description: "set psql variable NAME to VALUE (e.g., -v ON_ERROR_STOP=1)"},
				{Long: "--variable", Value: ValueRequired, Placeholder: "NAME=VALUE", Type: tStr, Description: "set psql variable NAME to VALUE (e.g., -v ON_ERROR_STOP=1)"},
				{Short: "-1", Long: "--single-transaction", Value: ValueNone, Type: tBool, Description: "execute as a single transaction (if non-interactive)"},
				{Long: "--help", Value: ValueOptional, Placeholder: "options", Type: tBool, Description: "show this help, then exit"},
			},
			noFlags:     []string{"-?"},
			shortTaken:  true,
			shortReused: true,
		},
		{
			file:  "terraform_help.txt",
			style: StyleGNU,
			subs: []Subcommand{
				{Name: "init", Description: "Prepare your working directory for other commands"},
				{Name: "force-unlock", Description: "Release a stuck lock on the current workspace"},
				{Name: "workspace", Description: "Workspace management"},
			},
			// Single-dash long options are not flags wraptool can allow.
			noFlags: []string{"-chdir", "-help", "-h", "-c"},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			checkText(t, readTestdata(t, filepath.Join("testdata", c.file)), c)
		})
	}
}

func TestParseSyntheticTexts(t *testing.T) {
	cases := []textCase{
		{
			name: "newer git prints negatable options as --[no-]name",
			text: "usage: git pull [<options>] [<repository> [<refspec>...]]\n\n" +
				"    -v, --[no-]verbose    be more verbose\n" +
				"    --[no-]verify         control use of pre-merge-commit and commit-msg hooks\n" +
				"    --[no-]recurse-submodules[=<on-demand>]\n" +
				"                          control for recursive fetching of submodules\n" +
				"    -n                    do not show a diffstat at the end of the merge\n",
			style: StyleGit,
			flags: []Flag{
				{Short: "-v", Long: "--verbose", Value: ValueNone, Type: tBool, Negatable: true, Description: "be more verbose"},
				{Long: "--verify", Value: ValueNone, Type: tBool, Negatable: true, Description: "control use of pre-merge-commit and commit-msg hooks"},
				{Long: "--no-verify", Value: ValueNone, Type: tBool, Description: "control use of pre-merge-commit and commit-msg hooks"},
				{Long: "--no-recurse-submodules", Value: ValueNone, Type: tBool, Description: "control for recursive fetching of submodules"},
				{Long: "--recurse-submodules", Value: ValueOptional, Placeholder: "<on-demand>", Type: tBool, Negatable: true, Description: "control for recursive fetching of submodules"},
			},
			noFlags: []string{"--no-n", "--no-", "--[no-]verify"},
		},
		{
			name: "stock cobra with pflag types",
			text: "Work seamlessly with GitHub from the command line.\n\n" +
				"Usage:\n  gh pr list [flags]\n\n" +
				"Aliases:\n  list, ls\n\n" +
				"Available Commands:\n" +
				"  checkout    Check out a pull request in git\n" +
				"  help        Help about any command\n\n" +
				"Flags:\n" +
				"  -L, --limit int          Maximum number of items to fetch (default 30)\n" +
				"      --count count        Verbosity\n" +
				"      --ratio float        A ratio\n" +
				"  -l, --label strings      Filter by label\n" +
				"      --color string[=\"always\"]   Colorize\n" +
				"  -w, --web                List pull requests in the web browser\n" +
				"  -h, --help               help for list\n\n" +
				"Global Flags:\n" +
				"      --repo string   Select another repository\n\n" +
				"Use \"gh pr list [command] --help\" for more information about a command.\n",
			style:       StyleCobra,
			description: "Work seamlessly with GitHub from the command line.",
			subs: []Subcommand{
				{Name: "checkout", Description: "Check out a pull request in git"},
				{Name: "help", Description: "Help about any command"},
			},
			noSubs: []string{"list", "gh"},
			flags: []Flag{
				{Short: "-L", Long: "--limit", Value: ValueRequired, Placeholder: "int", Type: tInt, Description: "Maximum number of items to fetch (default 30)"},
				{Long: "--count", Value: ValueRequired, Placeholder: "count", Type: tInt, Description: "Verbosity"},
				{Long: "--ratio", Value: ValueRequired, Placeholder: "float", Type: tStr, Description: "A ratio"},
				{Short: "-l", Long: "--label", Value: ValueRequired, Placeholder: "strings", Type: tStr, Description: "Filter by label"},
				{Long: "--color", Value: ValueOptional, Placeholder: "string", Type: tBool, Description: "Colorize"},
				{Short: "-w", Long: "--web", Value: ValueNone, Type: tBool, Description: "List pull requests in the web browser"},
				{Long: "--repo", Value: ValueRequired, Placeholder: "string", Type: tStr, Description: "Select another repository"},
			},
			helpCommand: true,
		},
		{
			name: "kubectl default forms",
			text: "Options:\n" +
				"    --tail=-1:\n\tLines of recent log file to display.\n\n" +
				"    --since=0s:\n\tOnly return logs newer than a relative duration.\n\n" +
				"    -p, --previous=false:\n\tIf true, print the logs for the previous instance.\n\n" +
				"    --selector='a b':\n\tSelector.\n\n",
			style: StyleCobra,
			flags: []Flag{
				{Long: "--tail", Value: ValueRequired, Type: tInt, Default: "-1", Description: "Lines of recent log file to display."},
				{Long: "--since", Value: ValueRequired, Type: tStr, Default: "0s", Description: "Only return logs newer than a relative duration."},
				{Short: "-p", Long: "--previous", Value: ValueNone, Type: tBool, Default: "false", Description: "If true, print the logs for the previous instance."},
				{Long: "--selector", Value: ValueRequired, Type: tStr, Default: "'a b'", Description: "Selector."},
			},
		},
		{
			name: "GNU short options with separate placeholders",
			text: "Usage: sed [OPTION]... {script-only-if-no-other-script} [input-file]...\n\n" +
				"  -n, --quiet, --silent\n" +
				"                 suppress automatic printing of pattern space\n" +
				"  -e script, --expression=script\n" +
				"                 add the script to the commands to be executed\n" +
				"  -l N, --line-length=N\n" +
				"                 specify the desired line-wrap length for the `l' command\n" +
				"  -o FILE        write to FILE\n" +
				"  -s, --separate\n" +
				"      --debug    annotate program execution\n",
			style: StyleGNU,
			flags: []Flag{
				{Short: "-n", Long: "--quiet", Value: ValueNone, Type: tBool, Description: "suppress automatic printing of pattern space"},
				{Long: "--silent", Value: ValueNone, Type: tBool, Description: "suppress automatic printing of pattern space"},
				{Short: "-e", Long: "--expression", Value: ValueRequired, Placeholder: "script", Type: tStr, Description: "add the script to the commands to be executed"},
				{Short: "-l", Long: "--line-length", Value: ValueRequired, Placeholder: "N", Type: tInt, Description: "specify the desired line-wrap length for the `l' command"},
				{Short: "-o", Value: ValueRequired, Placeholder: "FILE", Type: tStr, Description: "write to FILE"},
				// A deeper line below a spec-only line is an option of its
				// own when it parses as one.
				{Short: "-s", Long: "--separate", Value: ValueNone, Type: tBool},
				{Long: "--debug", Value: ValueNone, Type: tBool, Description: "annotate program execution"},
			},
		},
		{
			name: "argparse reads as GNU",
			text: "usage: tool [-h] [--count N] name\n\nDo a thing.\n\n" +
				"positional arguments:\n  name        the name\n\n" +
				"options:\n  -h, --help  show this help message and exit\n  --count N   how many\n",
			style:       StyleGNU,
			description: "Do a thing.",
			flags: []Flag{
				{Short: "-h", Long: "--help", Value: ValueNone, Type: tBool, Description: "show this help message and exit"},
				{Long: "--count", Value: ValueRequired, Placeholder: "N", Type: tInt, Description: "how many"},
			},
			noSubs: []string{"name"},
		},
		{
			name: "a man page with overstrike and ANSI color",
			text: "N\bNA\bAM\bME\bE\n       foo - frobnicate the bar\n\n" +
				"O\bOP\bPT\bTI\bIO\bON\bNS\bS\n       \x1b[1m-x\x1b[0m, \x1b[1m--extra\x1b[0m=_\bN\n           Extra count.\n",
			style:       StyleGNU,
			description: "frobnicate the bar",
			flags: []Flag{
				{Short: "-x", Long: "--extra", Value: ValueRequired, Placeholder: "N", Type: tInt, Description: "Extra count."},
			},
		},
		{
			name: "command lists with arguments before the gap or a dash",
			text: "systemctl [OPTIONS...] COMMAND ...\n\nQuery or send control commands to the system manager.\n\n" +
				"Unit Commands:\n" +
				"  list-units [PATTERN...]             List units currently in memory\n" +
				"  start UNIT...                       Start (activate) one or more units\n" +
				"  set-property UNIT PROPERTY=VALUE... Sets one or more properties of a unit\n" +
				"  daemon-reload                       Reload systemd manager configuration\n" +
				"  is this prose  no\n\n" +
				"Most used commands:\n  list - list packages based on package names\n",
			style:       StyleCobra,
			description: "Query or send control commands to the system manager.",
			subs: []Subcommand{
				{Name: "list-units", Description: "List units currently in memory"},
				{Name: "start", Description: "Start (activate) one or more units"},
				{Name: "set-property", Description: "Sets one or more properties of a unit"},
				{Name: "daemon-reload", Description: "Reload systemd manager configuration"},
				{Name: "list", Description: "list packages based on package names"},
			},
			noSubs: []string{"is"},
		},
		{
			name:  "docker marks plugin commands with a star",
			text:  "Usage:  docker [OPTIONS] COMMAND\n\nManagement Commands:\n  buildx*     Docker Buildx\n  compose*    Docker Compose\n  image       Manage images\n",
			style: StyleCobra,
			subs: []Subcommand{
				{Name: "buildx", Description: "Docker Buildx"},
				{Name: "compose", Description: "Docker Compose"},
			},
		},
		{
			name:  "the fallback reads flags anywhere, conservatively",
			text:  "frob 1.0\n-x          do x\n--long          long thing\n--file=PATH  read PATH\n--level <n> set level\n--color[=WHEN] colors\n-name foo\n- not a flag\n--. nope\n",
			style: StyleFallback,
			flags: []Flag{
				{Short: "-x", Value: ValueUnknown, Type: tUnk, Description: "do x"},
				{Long: "--long", Value: ValueUnknown, Type: tUnk, Description: "long thing"},
				{Long: "--file", Value: ValueRequired, Placeholder: "PATH", Type: tStr, Description: "read PATH"},
				{Long: "--level", Value: ValueRequired, Placeholder: "<n>", Type: tInt, Description: "set level"},
				{Long: "--color", Value: ValueOptional, Placeholder: "WHEN", Type: tBool, Description: "colors"},
			},
			noFlags: []string{"-name", "-n", "--.", "-"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkText(t, c.text, c)
		})
	}
}

func checkText(t *testing.T, text string, c textCase) {
	t.Helper()
	h, ok := Parse(text)
	if !ok {
		t.Fatalf("Parse: ok = false, want true")
	}
	if c.style != "" && h.Style != c.style {
		t.Errorf("Style = %q, want %q", h.Style, c.style)
	}
	if h.Description != c.description {
		t.Errorf("Description = %q, want %q", h.Description, c.description)
	}
	for _, want := range c.subs {
		got, found := findSub(h, want.Name)
		if !found {
			t.Errorf("subcommand %q not listed; got %v", want.Name, subNames(h))
			continue
		}
		if got != want {
			t.Errorf("subcommand %q = %+v, want %+v", want.Name, got, want)
		}
	}
	for _, name := range c.noSubs {
		if _, found := findSub(h, name); found {
			t.Errorf("subcommand %q listed, want it absent", name)
		}
	}
	for _, want := range c.flags {
		spelling := want.Long
		if spelling == "" {
			spelling = want.Short
		}
		got, found := h.Flag(spelling)
		if !found {
			t.Errorf("Flag(%q) not found", spelling)
			continue
		}
		if got != want {
			t.Errorf("Flag(%q):\n got  %+v\n want %+v", spelling, got, want)
		}
		if want.Short != "" && want.Long != "" {
			if byShort, _ := h.Flag(want.Short); byShort != got {
				t.Errorf("Flag(%q) = %+v, want the same flag as Flag(%q)", want.Short, byShort, spelling)
			}
		}
	}
	for _, spelling := range c.noFlags {
		if f, found := h.Flag(spelling); found {
			t.Errorf("Flag(%q) = %+v, want none", spelling, f)
		}
	}
	if got := h.ShortHelpTaken(); got != c.shortTaken {
		t.Errorf("ShortHelpTaken() = %v, want %v", got, c.shortTaken)
	}
	if got := h.ShortHelpReused(); got != c.shortReused {
		t.Errorf("ShortHelpReused() = %v, want %v", got, c.shortReused)
	}
	if got := h.HasSubcommand("help"); got != c.helpCommand {
		t.Errorf(`HasSubcommand("help") = %v, want %v`, got, c.helpCommand)
	}
	checkInvariants(t, h)
}

func findSub(h Help, name string) (Subcommand, bool) {
	for _, s := range h.Subcommands {
		if s.Name == name {
			return s, true
		}
	}
	return Subcommand{}, false
}

func subNames(h Help) []string {
	var names []string
	for _, s := range h.Subcommands {
		names = append(names, s.Name)
	}
	return names
}

func TestParseRejectsWhatIsNotHelp(t *testing.T) {
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7919 + i/3)
	}
	cases := map[string]string{
		"empty text":                      "",
		"blank lines":                     "\n\n   \n\t\n",
		"prose":                           "Hello there.\nThis program does things.\nIt has no options to speak of.\n",
		"an error message":                "error: unknown option `--help'\n",
		"binary bytes":                    string(garbage),
		"an ELF header and NULs":          "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00\x01\x00\x00\x00",
		"only single-dash long options":   "Usage: terraform [global options]\n\n  -chdir=DIR    Switch\n  -help         Show\n",
		"a usage line alone":              "usage: git pull [<options>] [<repository> [<refspec>...]]\n",
		"dashes that are not flags":       "  - item one\n  -- end of options\n  --- rule\n  -. dot\n",
		"a command list under no heading": "Things:\n  apple   A fruit\n  pear    Another\n",
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if h, ok := Parse(text); ok {
				t.Errorf("Parse = %+v, true; want ok = false", h)
			}
		})
	}
}

func TestFlagLookup(t *testing.T) {
	h := Help{Flags: []Flag{
		{Short: "-n", Long: "--verify", Value: ValueNone, Type: tBool, Negatable: true, Description: "run hooks"},
		{Long: "--no-edit", Value: ValueNone, Type: tBool, Description: "listed in its own right"},
		{Long: "--edit", Value: ValueNone, Type: tBool, Negatable: true, Description: "edit"},
	}}
	cases := []struct {
		spelling string
		want     Flag
		found    bool
	}{
		{"-n", h.Flags[0], true},
		{"--verify", h.Flags[0], true},
		{"--no-verify", Flag{Long: "--no-verify", Value: ValueNone, Type: tBool, Description: "run hooks"}, true},
		{"--no-edit", h.Flags[1], true},
		{"--no-", Flag{}, false},
		{"", Flag{}, false},
		{"--missing", Flag{}, false},
	}
	for _, c := range cases {
		got, found := h.Flag(c.spelling)
		if found != c.found || got != c.want {
			t.Errorf("Flag(%q) = %+v, %v; want %+v, %v", c.spelling, got, found, c.want, c.found)
		}
	}
}

// checkInvariants asserts what every Help must satisfy, whatever the input:
// the fuzz targets' property, also run on every table case.
func checkInvariants(t testing.TB, h Help) {
	t.Helper()
	switch h.Style {
	case StyleGit, StyleCobra, StyleGNU, StyleFallback:
	default:
		t.Errorf("Style = %q, not a known style", h.Style)
	}
	if len(h.Flags) > maxFlags || len(h.Subcommands) > maxSubcommands {
		t.Errorf("%d flags, %d subcommands: over the caps", len(h.Flags), len(h.Subcommands))
	}
	longs, shortOnly, subs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, f := range h.Flags {
		if f.Short == "" && f.Long == "" {
			t.Errorf("flag %+v has no spelling", f)
		}
		if f.Short != "" && (len(f.Short) != 2 || !policy.ValidFlag(f.Short)) {
			t.Errorf("flag %+v: Short %q is not -X", f, f.Short)
		}
		if f.Long != "" && (!strings.HasPrefix(f.Long, "--") || !policy.ValidFlag(f.Long)) {
			t.Errorf("flag %+v: Long %q is not --name", f, f.Long)
		}
		if f.Long != "" {
			if longs[f.Long] {
				t.Errorf("Long %q listed twice", f.Long)
			}
			longs[f.Long] = true
		} else {
			if shortOnly[f.Short] {
				t.Errorf("short-only %q listed twice", f.Short)
			}
			shortOnly[f.Short] = true
		}
		var want policy.Type
		switch f.Value {
		case ValueNone, ValueOptional:
			want = policy.TypeBoolean
		case ValueUnknown:
			want = policy.TypeUnknown
		case ValueRequired:
			if f.Type != policy.TypeInteger && f.Type != policy.TypeString {
				t.Errorf("flag %+v: a value-taking flag typed %v", f, f.Type)
			}
			want = f.Type
		default:
			t.Errorf("flag %+v: Value %d out of range", f, f.Value)
		}
		if f.Type != want {
			t.Errorf("flag %+v: Type %v with Value %v", f, f.Type, f.Value)
		}
		if f.Value == ValueNone && f.Placeholder != "" {
			t.Errorf("flag %+v: a switch with a placeholder", f)
		}
		if f.Negatable && f.Long == "" {
			t.Errorf("flag %+v: negatable without a long form", f)
		}
		if strings.Contains(f.Description, "\n") || f.Description != strings.TrimSpace(f.Description) {
			t.Errorf("flag %+v: Description is not one trimmed line", f)
		}
	}
	for _, s := range h.Subcommands {
		if !policy.ValidToken(s.Name) {
			t.Errorf("subcommand %q is not a valid token", s.Name)
		}
		if subs[s.Name] {
			t.Errorf("subcommand %q listed twice", s.Name)
		}
		subs[s.Name] = true
		if strings.Contains(s.Description, "\n") || s.Description != strings.TrimSpace(s.Description) {
			t.Errorf("subcommand %+v: Description is not one trimmed line", s)
		}
	}
	if strings.Contains(h.Description, "\n") {
		t.Errorf("Description %q spans lines", h.Description)
	}
}
