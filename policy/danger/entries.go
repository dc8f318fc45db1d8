package danger

// entries are the known CLIs' flags and subcommands, each with the words
// of the help it was taken from (testdata/SOURCES.md says where each text
// came from).
var entries = []Entry{
	// psql (PostgreSQL 15): every connection option takes the password
	// (from ~/.pgpass or PGPASSWORD) to the server it names.
	{CLI: "psql", Flag: "-h", Classes: Of(SendsCredentials),
		Why: "connects to the host it names, and sends your password there", Source: "psql_help.txt",
		Quote: `-h, --host=HOSTNAME database server host or socket directory`},
	{CLI: "psql", Flag: "--host", Classes: Of(SendsCredentials),
		Why: "connects to the host it names, and sends your password there", Source: "psql_help.txt",
		Quote: `-h, --host=HOSTNAME database server host or socket directory`},
	{CLI: "psql", Flag: "-d", Classes: Of(SendsCredentials),
		Why: "takes a connection string (postgresql://user@host/db), whose host gets your password", Source: "psql_help.txt",
		Quote: `-d, --dbname=DBNAME database name to connect to`},
	{CLI: "psql", Flag: "--dbname", Classes: Of(SendsCredentials),
		Why: "takes a connection string (postgresql://user@host/db), whose host gets your password", Source: "psql_help.txt",
		Quote: `-d, --dbname=DBNAME database name to connect to`},

	// aws (aws-cli 1.45): global options, accepted after any subcommand.
	{CLI: "aws", Flag: "--endpoint-url", Classes: Of(SendsCredentials),
		Why: "sends the request, signed with your keys and session token, to the URL it names", Source: "aws_help.txt",
		Quote: `--endpoint-url (string) Override command's default URL with the given URL.`},

	// git (2.39): global options, before any subcommand.
	{CLI: "git", Root: true, Flag: "-c", Classes: Of(RunsCode, SendsCredentials),
		Why: "sets any config value for the run: core.sshCommand, core.pager, credential.helper run programs; url.<base>.insteadOf moves a remote", Source: "git_man.txt",
		Quote: `-c <name>=<value> Pass a configuration parameter to the command.`},

	// gcloud (SDK 528): global flags.
	{CLI: "gcloud", Flag: "--flags-file", Classes: Of(ReadsFiles, SendsCredentials, RunsCode),
		Why: "reads any flags from the file it names, so the file can give every other flag", Source: "gcloud_help.txt",
		Quote: `--flags-file=YAML_FILE A YAML or JSON file that specifies a --flag:value dictionary.`},
}
