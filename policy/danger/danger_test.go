package danger

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// squash makes runs of white space one blank, so a quote survives the
// help's line wrapping and tabs.
func squash(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestEveryEntryQuotesItsSource(t *testing.T) {
	texts := map[string]string{}
	for _, e := range Entries() {
		name := e.CLI + " " + strings.Join(e.Subcommand, " ") + " " + e.Flag
		t.Run(squash(name), func(t *testing.T) {
			text, ok := texts[e.Source]
			if !ok {
				data, err := os.ReadFile(filepath.Join("testdata", e.Source))
				if err != nil {
					t.Fatalf("source: %v", err)
				}
				text = squash(string(data))
				texts[e.Source] = text
			}
			if e.Quote == "" || !strings.Contains(text, squash(e.Quote)) {
				t.Errorf("testdata/%s does not contain the quote %q", e.Source, e.Quote)
			}
			switch {
			case e.Flag != "" && !containsFlag(e.Quote, e.Flag):
				t.Errorf("the quote %q does not name %s", e.Quote, e.Flag)
			case e.Flag == "" && len(e.Subcommand) > 0 && !containsFlag(e.Quote, e.Subcommand[len(e.Subcommand)-1]):
				t.Errorf("the quote %q does not name the subcommand %q", e.Quote, e.Subcommand)
			}
			if e.Why == "" || strings.ContainsAny(e.Why, "\n\t") {
				t.Errorf("Why %q: want one line", e.Why)
			}
			if e.Flag == "" && len(e.Subcommand) == 0 {
				t.Errorf("an entry names a flag or a subcommand")
			}
			if e.Root && len(e.Subcommand) > 0 {
				t.Errorf("a Root entry has no subcommand")
			}
		})
	}
}

// containsFlag reports whether text names flag as a whole word (-c is not
// found in --config).
func containsFlag(text, flag string) bool {
	for i := 0; ; {
		j := strings.Index(text[i:], flag)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(flag)
		before := j == 0 || !isFlagChar(text[j-1])
		after := end == len(text) || !isFlagChar(text[end])
		if before && after {
			return true
		}
		i = j + 1
	}
}

func isFlagChar(c byte) bool {
	return c == '-' || c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

func TestLookupFlag(t *testing.T) {
	tests := []struct {
		name string
		cli  string
		sub  []string
		flag string
		want Classes
	}{
		{"psql's -h names the host", "psql", nil, "-h", Of(SendsCredentials)},
		{"psql's -d takes a connection string", "psql", nil, "-d", Of(SendsCredentials)},
		{"psql's --dbname= with a URL is still --dbname", "psql", nil, "--dbname=postgresql://u@evil/db", Of(SendsCredentials)},
		{"psql's -c runs backslash commands", "psql", nil, "-c", Of(RunsCode)},
		{"psql's -o writes or pipes", "psql", nil, "-o", Of(RunsCode, WritesFiles)},
		{"psql's -L writes the log", "psql", nil, "-L", Of(WritesFiles)},
		{"psql's -p is a port on the named host", "psql", nil, "-p", nil},
		{"psql takes an abbreviated --host", "psql", nil, "--hos", Of(SendsCredentials)},
		{"aws's --endpoint-url holds after any subcommand", "aws", []string{"s3", "ls"}, "--endpoint-url", Of(SendsCredentials)},
		{"aws's --endpoint-url= form", "aws", []string{"s3", "ls"}, "--endpoint-url=https://evil.example", Of(SendsCredentials)},
		{"aws's --endpoint-url= with nothing after it", "aws", nil, "--endpoint-url=", Of(SendsCredentials)},
		{"aws takes an abbreviated --endpoint-url", "aws", []string{"sts", "get-caller-identity"}, "--endpoint-u", Of(SendsCredentials)},
		{"aws's --endpoint-url with U+2010 for a hyphen is no flag", "aws", []string{"s3", "ls"}, "--endpoint\u2010url", nil},
		{"aws's --endpoint-url with a fullwidth hyphen is no flag", "aws", nil, "\uff0d\uff0dendpoint-url", nil},
		{"aws's --profile picks the credentials", "aws", []string{"s3", "ls"}, "--profile", Of(SendsCredentials)},
		{"aws's --debug prints the session token", "aws", nil, "--debug", Of(PrintsCredentials)},
		{"aws's --output is a format, not a file", "aws", []string{"s3", "ls"}, "--output", nil},
		{"aws's abbreviated --output is still a format", "aws", nil, "--outp", nil},
		{"aws's --cli-input-json reads file://", "aws", []string{"sts", "assume-role"}, "--cli-input-json", Of(ReadsFiles)},
		{"git's -c before a subcommand sets config", "git", nil, "-c", Of(SendsCredentials, RunsCode)},
		{"git log's -c is a combined diff", "git", []string{"log"}, "-c", nil},
		{"git's -C before a subcommand changes the repository", "git", nil, "-C", Of(RunsCode)},
		{"git log's -C finds copies", "git", []string{"log"}, "-C", nil},
		{"git's --exec-path", "git", nil, "--exec-path=/tmp/x", Of(RunsCode)},
		{"git push --receive-pack", "git", []string{"push"}, "--receive-pack", Of(RunsCode)},
		{"git push --exec is --receive-pack", "git", []string{"push"}, "--exec=/tmp/x", Of(RunsCode)},
		{"git push takes an abbreviated --receive-pack", "git", []string{"push"}, "--receive-p", Of(RunsCode)},
		{"git push takes --e for --exec", "git", []string{"push"}, "--e=sh", Of(RunsCode)},
		{"a bare -- is no flag of git's", "git", []string{"push"}, "--", nil},
		{"git fetch --upload-pack", "git", []string{"fetch"}, "--upload-pack", Of(RunsCode)},
		{"git fetch takes an abbreviated --upload-pack", "git", []string{"fetch"}, "--upload-p", Of(RunsCode)},
		{"git clone -u is --upload-pack", "git", []string{"clone"}, "-u", Of(RunsCode)},
		{"git clone --template runs hooks", "git", []string{"clone"}, "--template", Of(RunsCode)},
		{"git init --template runs hooks", "git", []string{"init"}, "--template=/tmp/t", Of(RunsCode)},
		{"git clone -c sets config", "git", []string{"clone"}, "-c", Of(SendsCredentials, RunsCode)},
		{"git clone -o names the remote", "git", []string{"clone"}, "-o", nil},
		{"git commit -o is --only", "git", []string{"commit"}, "-o", nil},
		{"git grep -o is --only-matching", "git", []string{"grep"}, "-o", nil},
		{"git grep -O runs a pager", "git", []string{"grep"}, "-O", Of(RunsCode)},
		{"git push -o is a push option", "git", []string{"push"}, "-o", nil},
		{"git log --output writes", "git", []string{"log"}, "--output=/tmp/x", Of(WritesFiles)},
		{"git archive -o writes", "git", []string{"archive"}, "-o", Of(WritesFiles)},
		{"git rebase -x runs a command", "git", []string{"rebase"}, "-x", Of(RunsCode)},
		{"git -h is help", "git", nil, "-h", nil},
		{"gh --hostname under auth", "gh", []string{"auth", "login"}, "--hostname", Of(SendsCredentials)},
		{"gh -h under auth is --hostname", "gh", []string{"auth", "token"}, "-h", Of(SendsCredentials)},
		{"gh -h elsewhere is help", "gh", []string{"pr", "list"}, "-h", nil},
		{"gh api --hostname", "gh", []string{"api"}, "--hostname=evil.example", Of(SendsCredentials)},
		{"gh -R takes a host", "gh", []string{"pr", "list"}, "-R", Of(SendsCredentials)},
		{"gh --repo= with a host", "gh", []string{"issue", "create"}, "--repo=evil.example/o/r", Of(SendsCredentials)},
		{"gh auth status -t prints the token", "gh", []string{"auth", "status"}, "-t", Of(PrintsCredentials)},
		{"gh auth status --show-token prints the token", "gh", []string{"auth", "status"}, "--show-token", Of(PrintsCredentials)},
		{"gh api --input reads a file and sends it", "gh", []string{"api"}, "--input", Of(SendsCredentials, ReadsFiles)},
		{"gh api --template is a string", "gh", []string{"api"}, "--template", nil},
		{"gh release download -O writes", "gh", []string{"release", "download"}, "-O", Of(WritesFiles)},
		{"gh run download --dir writes", "gh", []string{"run", "download"}, "--dir", Of(WritesFiles)},
		{"gh config set --host is a setting's host", "gh", []string{"config", "set"}, "--host", nil},
		{"gh secret set -o is --org", "gh", []string{"secret", "set"}, "-o", nil},
		{"gh takes no abbreviation", "gh", []string{"api"}, "--hostn", nil},
		{"gcloud --impersonate-service-account", "gcloud", []string{"compute", "instances", "list"}, "--impersonate-service-account=sa@p.iam.gserviceaccount.com", Of(SendsCredentials)},
		{"gcloud --flags-file", "gcloud", []string{"compute", "instances", "list"}, "--flags-file", Of(SendsCredentials, RunsCode, ReadsFiles)},
		{"gcloud --access-token-file", "gcloud", nil, "--access-token-file", Of(ReadsFiles)},
		{"gcloud --account", "gcloud", []string{"projects", "list"}, "--account", Of(SendsCredentials)},
		{"gcloud --configuration", "gcloud", nil, "--configuration", Of(SendsCredentials)},
		{"gcloud --log-http", "gcloud", []string{"projects", "list"}, "--log-http", Of(PrintsCredentials)},
		{"gcloud compute ssh --ssh-flag", "gcloud", []string{"compute", "ssh"}, "--ssh-flag", Of(SendsCredentials, RunsCode)},
		{"gcloud takes no abbreviation", "gcloud", nil, "--flags-fi", nil},
		{"kubectl -s is --server", "kubectl", []string{"get", "pods"}, "-s", Of(SendsCredentials)},
		{"kubectl --server=", "kubectl", []string{"get", "pods"}, "--server=https://evil.example", Of(SendsCredentials)},
		{"kubectl --kubeconfig", "kubectl", nil, "--kubeconfig", Of(SendsCredentials, RunsCode, ReadsFiles)},
		{"kubectl --token", "kubectl", []string{"get"}, "--token", Of(SendsCredentials)},
		{"kubectl --as", "kubectl", []string{"get"}, "--as", Of(SendsCredentials)},
		{"kubectl -o is a format that can read a file", "kubectl", []string{"get", "pods"}, "-o", Of(ReadsFiles)},
		{"kubectl -o= with jsonpath-file", "kubectl", []string{"get", "pods"}, "-o=jsonpath-file=/etc/shadow", Of(ReadsFiles)},
		{"kubectl --profile is a Go profile", "kubectl", []string{"get"}, "--profile", nil},
		{"kubectl --profile-output writes", "kubectl", []string{"get"}, "--profile-output", Of(WritesFiles)},
		{"kubectl config view --raw", "kubectl", []string{"config", "view"}, "--raw", Of(PrintsCredentials)},
		{"kubectl apply -f reads", "kubectl", []string{"apply"}, "-f", Of(ReadsFiles)},
		{"kubectl logs -f follows", "kubectl", []string{"logs"}, "-f", nil},
		{"kubectl -h is help", "kubectl", []string{"get"}, "-h", nil},
		{"kubectl takes no abbreviation", "kubectl", nil, "--serv", nil},
		{"kubectl set-credentials --exec-command", "kubectl", []string{"config", "set-credentials"}, "--exec-command", Of(RunsCode)},
		{"kubectl set-credentials --exec-api-version is a name", "kubectl", []string{"config", "set-credentials"}, "--exec-api-version", nil},
		{"mysql -h names the host", "mysql", nil, "-h", Of(SendsCredentials)},
		{"mysql -S names a socket", "mysql", nil, "--socket=/tmp/x.sock", Of(SendsCredentials)},
		{"mysql --pager runs a program", "mysql", nil, "--pager=sh", Of(RunsCode)},
		{"mysql --init-command is SQL", "mysql", nil, "--init-command", nil},
		{"mysql -o is --one-database", "mysql", nil, "-o", nil},
		{"mysql --print-defaults prints the password", "mysql", nil, "--print-defaults", Of(PrintsCredentials)},
		{"mysql takes an abbreviated --print-defaults", "mysql", nil, "--print-def", Of(PrintsCredentials)},
		{"curl -w reads @file", "curl", nil, "-w", Of(ReadsFiles)},
		{"docker run --cap-add", "docker", []string{"run"}, "--cap-add=SYS_ADMIN", Of(RunsCode)},
		{"aws ssm get-parameter --with-decryption", "aws", []string{"ssm", "get-parameter"}, "--with-decryption", Of(PrintsCredentials)},
		{"aws ssm get-parameter --no-with-decryption is no abbreviation of it", "aws", []string{"ssm", "get-parameter"}, "--no-with-decryption", nil},
		{"mysql --defaults-file", "mysql", nil, "--defaults-file", Of(SendsCredentials, RunsCode, WritesFiles, ReadsFiles)},
		{"docker -H before a subcommand", "docker", nil, "-H", Of(SendsCredentials)},
		{"docker run -h is the container's host name", "docker", []string{"run"}, "-h", nil},
		{"docker run --hostname is the container's host name", "docker", []string{"run"}, "--hostname", nil},
		{"docker run -c is --cpu-shares", "docker", []string{"run"}, "-c", nil},
		{"docker -c before a subcommand is --context", "docker", nil, "-c", Of(SendsCredentials)},
		{"docker run -v mounts a host path", "docker", []string{"run"}, "-v", Of(WritesFiles, ReadsFiles)},
		{"docker container run --privileged", "docker", []string{"container", "run"}, "--privileged", Of(RunsCode)},
		{"docker save -o writes", "docker", []string{"save"}, "-o", Of(WritesFiles)},
		{"docker --config", "docker", nil, "--config", Of(SendsCredentials, RunsCode, ReadsFiles)},
		{"curl --data=@file", "curl", nil, "--data=@/etc/passwd", Of(SendsCredentials, ReadsFiles)},
		{"curl -T uploads a file", "curl", nil, "-T", Of(SendsCredentials, ReadsFiles)},
		{"curl -o writes", "curl", nil, "-o", Of(WritesFiles)},
		{"curl -x names a proxy", "curl", nil, "-x", Of(SendsCredentials)},
		{"curl --resolve moves the host", "curl", nil, "--resolve", Of(SendsCredentials)},
		{"curl -K reads options", "curl", nil, "-K", Of(SendsCredentials, WritesFiles, ReadsFiles)},
		{"curl -v shows headers", "curl", nil, "-v", Of(PrintsCredentials)},
		{"curl takes an abbreviated --upload-file", "curl", nil, "--upload-f", Of(SendsCredentials, ReadsFiles)},
		{"curl -h is help", "curl", nil, "-h", nil},
		{"curl -u is the assistant's own user:password", "curl", nil, "-u", nil},
		{"ssh -o sets any keyword", "ssh", nil, "-o", Of(SendsCredentials, RunsCode, WritesFiles, ReadsFiles)},
		{"ssh -oProxyCommand= form", "ssh", nil, "-o=ProxyCommand=sh", Of(SendsCredentials, RunsCode, WritesFiles, ReadsFiles)},
		{"ssh -A forwards the agent", "ssh", nil, "-A", Of(SendsCredentials)},
		{"ssh -L is a local forward", "ssh", nil, "-L", nil},
		{"ssh -I loads a library", "ssh", nil, "-I", Of(RunsCode)},
		// Generic names, for any CLI.
		{"a generic --host", "mytool", nil, "--host", Of(SendsCredentials)},
		{"a generic --endpoint", "mytool", []string{"x"}, "--endpoint", Of(SendsCredentials)},
		{"a generic --endpoint-url=", "mytool", []string{"x"}, "--endpoint-url=https://evil", Of(SendsCredentials)},
		{"a generic --exec-path", "mytool", nil, "--exec-path", Of(RunsCode)},
		{"a generic --token-file", "mytool", nil, "--token-file", Of(ReadsFiles)},
		{"a generic --kubeconfig", "mytool", nil, "--kubeconfig", Of(SendsCredentials, ReadsFiles)},
		{"a generic -o", "mytool", nil, "-o", Of(WritesFiles)},
		{"a generic --proxy", "mytool", nil, "--proxy=http://evil:3128", Of(SendsCredentials)},
		{"a generic --token", "mytool", nil, "--token", Of(SendsCredentials)},
		{"a generic --pager", "mytool", nil, "--pager", Of(RunsCode)},
		{"a generic --ssh-command", "mytool", nil, "--ssh-command", Of(RunsCode)},
		{"a generic --command runs code", "mytool", nil, "--command", Of(RunsCode)},
		{"a generic --cmd", "mytool", nil, "--cmd=id", Of(RunsCode)},
		{"a generic --shell", "mytool", nil, "--shell", Of(RunsCode)},
		{"a generic --editor", "mytool", nil, "--editor", Of(RunsCode)},
		{"a generic --script", "mytool", nil, "--script", Of(RunsCode)},
		{"a generic --eval", "mytool", nil, "--eval", Of(RunsCode)},
		{"a generic --output-file writes, though it ends in -file", "mytool", nil, "--output-file", Of(WritesFiles)},
		{"a generic --out-file writes", "mytool", nil, "--out-file=/tmp/x", Of(WritesFiles)},
		{"a generic --log-file writes", "mytool", nil, "--log-file", Of(WritesFiles)},
		{"a generic --outfile writes", "mytool", nil, "--outfile", Of(WritesFiles)},
		{"a generic --dump-file writes", "mytool", nil, "--dump-file", Of(WritesFiles)},
		{"a generic --output-dir writes", "mytool", nil, "--output-dir", Of(WritesFiles)},
		{"a generic --input-file still reads", "mytool", nil, "--input-file", Of(ReadsFiles)},
		{"a generic --base-url", "mytool", nil, "--base-url", Of(SendsCredentials)},
		{"a generic --index-url", "pip", []string{"install"}, "--index-url", Of(SendsCredentials)},
		{"a generic --extra-index-url", "pip", []string{"install"}, "--extra-index-url=https://evil", Of(SendsCredentials)},
		{"a generic --database-url", "mytool", nil, "--database-url", Of(SendsCredentials)},
		{"a generic --webhook-url", "mytool", nil, "--webhook-url", Of(SendsCredentials)},
		{"--curl is no --*-url", "mytool", nil, "--curl", nil},
		{"a generic --address", "mytool", nil, "--address", Of(SendsCredentials)},
		{"a generic --registry", "npm", []string{"publish"}, "--registry", Of(SendsCredentials)},
		{"a generic --uri", "mytool", nil, "--uri", Of(SendsCredentials)},
		{"a generic --dsn", "mytool", nil, "--dsn", Of(SendsCredentials)},
		{"a generic --connection-string", "mytool", nil, "--connection-string", Of(SendsCredentials)},
		{"a generic --access-token", "mytool", nil, "--access-token", Of(SendsCredentials)},
		{"a generic --auth-token", "mytool", nil, "--auth-token", Of(SendsCredentials)},
		{"a generic --api-key", "mytool", nil, "--api-key", Of(SendsCredentials)},
		{"--commands is not --command", "mytool", nil, "--commands", nil},
		{"--output-* with U+2010 is no flag", "mytool", nil, "--output\u2010file", nil},
		{"psql's --command keeps its entry", "psql", nil, "--command", Of(RunsCode)},
		{"psql's --log-file keeps its entry", "psql", nil, "--log-file", Of(WritesFiles)},
		{"gh alias set --shell keeps its entry", "gh", []string{"alias", "set"}, "--shell", Of(RunsCode)},
		{"git format-patch --output-directory keeps its entry", "git", []string{"format-patch"}, "--output-directory", Of(WritesFiles)},
		{"git diff --output-indicator-new writes no file", "git", []string{"diff"}, "--output-indicator-new=+", nil},
		{"git log --output-indicator-old writes no file", "git", []string{"log"}, "--output-indicator-old", nil},
		{"git ls-remote --get-url connects nowhere", "git", []string{"ls-remote"}, "--get-url", nil},
		{"kubectl port-forward --address only listens", "kubectl", []string{"port-forward"}, "--address", nil},
		{"kubectl proxy --address serves your credentials", "kubectl", []string{"proxy"}, "--address=0.0.0.0", Of(SendsCredentials)},
		{"kubectl run --command is a switch", "kubectl", []string{"run"}, "--command", nil},
		{"kubectl get --output-watch-events is a switch", "kubectl", []string{"get"}, "--output-watch-events", nil},
		{"kubectl set-cluster --proxy-url", "kubectl", []string{"config", "set-cluster"}, "--proxy-url", Of(SendsCredentials)},
		{"gcloud compute ssh --command keeps its entry", "gcloud", []string{"compute", "ssh"}, "--command", Of(RunsCode)},
		// Uploads: a file the tool reads goes to a host.
		{"curl -d @file sends it", "curl", nil, "-d", Of(SendsCredentials, ReadsFiles)},
		{"curl --data-binary sends it", "curl", nil, "--data-binary", Of(SendsCredentials, ReadsFiles)},
		{"curl --data-urlencode sends it", "curl", nil, "--data-urlencode", Of(SendsCredentials, ReadsFiles)},
		{"curl --data-ascii sends it", "curl", nil, "--data-ascii", Of(SendsCredentials, ReadsFiles)},
		{"curl --data-raw reads no file", "curl", nil, "--data-raw", nil},
		{"curl --json sends it", "curl", nil, "--json=@/home/u/.aws/credentials", Of(SendsCredentials, ReadsFiles)},
		{"curl -F sends it", "curl", nil, "-F", Of(SendsCredentials, ReadsFiles)},
		{"curl --form sends it", "curl", nil, "--form", Of(SendsCredentials, ReadsFiles)},
		{"curl --upload-file sends it", "curl", nil, "--upload-file", Of(SendsCredentials, ReadsFiles)},
		{"curl -H @file sends it", "curl", nil, "-H", Of(SendsCredentials, ReadsFiles)},
		{"gh issue create --body-file sends it", "gh", []string{"issue", "create"}, "--body-file", Of(SendsCredentials, ReadsFiles)},
		{"gh issue create -F sends it", "gh", []string{"issue", "create"}, "-F", Of(SendsCredentials, ReadsFiles)},
		{"gh pr create --body-file sends it", "gh", []string{"pr", "create"}, "--body-file", Of(SendsCredentials, ReadsFiles)},
		{"gh pr create -F sends it", "gh", []string{"pr", "create"}, "-F", Of(SendsCredentials, ReadsFiles)},
		{"gh api -F field=@file sends it", "gh", []string{"api"}, "-F", Of(SendsCredentials, ReadsFiles)},
		{"gh api --field sends it", "gh", []string{"api"}, "--field", Of(SendsCredentials, ReadsFiles)},
		{"gh release create --notes-file sends it", "gh", []string{"release", "create"}, "--notes-file", Of(SendsCredentials, ReadsFiles)},
		{"gh secret set --env-file sends it", "gh", []string{"secret", "set"}, "--env-file", Of(SendsCredentials, ReadsFiles)},
		// gcloud's release tracks hold what gcloud holds.
		{"gcloud beta --flags-file", "gcloud", []string{"beta", "compute", "instances", "list"}, "--flags-file", Of(SendsCredentials, RunsCode, ReadsFiles)},
		{"gcloud alpha compute ssh --ssh-flag", "gcloud", []string{"alpha", "compute", "ssh"}, "--ssh-flag", Of(SendsCredentials, RunsCode)},
		{"gcloud preview compute ssh --command", "gcloud", []string{"preview", "compute", "ssh"}, "--command", Of(RunsCode)},
		{"gcloud beta beta is no track twice", "gcloud", []string{"beta", "beta", "compute", "ssh"}, "--ssh-flag", nil},
		{"a track of another CLI is no track", "gh", []string{"beta", "api"}, "--input", nil},
		{"--file alone is no --*-file", "mytool", nil, "--file", nil},
		{"--hosts is not --host", "mytool", nil, "--hosts", nil},
		{"an unknown CLI takes no abbreviation", "mytool", nil, "--hos", nil},
		{"a harmless flag", "mytool", nil, "--verbose", nil},
		// Hostile names.
		{"an empty name", "mytool", nil, "", nil},
		{"a lone dash", "psql", nil, "-", nil},
		{"a lone =", "psql", nil, "=", nil},
		{"= then a flag", "psql", nil, "=-h", nil},
		{"no leading dash", "psql", nil, "h", nil},
		{"a flag with a NUL", "psql", nil, "-h\x00", nil},
		{"a flag with a newline", "aws", nil, "--endpoint-url\n", nil},
		{"a flag with a tab", "aws", nil, "--endpoint\turl", nil},
		{"a flag with an escape", "mytool", nil, "--host\x1b[0m", nil},
		{"a flag with a right-to-left override", "mytool", nil, "--\u202ehost", nil},
		{"a flag with a zero-width space", "aws", nil, "--endpoint\u200b-url", nil},
		{"invalid UTF-8", "mytool", nil, "--host\xff", nil},
		{"a very long flag", "mytool", nil, "--" + strings.Repeat("a", 1<<16) + "-file", Of(ReadsFiles)},
		{"a very long value", "aws", nil, "--endpoint-url=" + strings.Repeat("x", 1<<16), Of(SendsCredentials)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Flag(tt.cli, tt.sub, tt.flag); !slices.Equal(got, tt.want) {
				t.Errorf("Flag(%q, %q, %.40q) = %v, want %v", tt.cli, tt.sub, tt.flag, got, tt.want)
			}
		})
	}
}

func TestLookupSubcommand(t *testing.T) {
	tests := []struct {
		name string
		cli  string
		sub  []string
		want Classes
	}{
		{"gh auth token prints the token", "gh", []string{"auth", "token"}, Of(PrintsCredentials)},
		{"gh auth status alone prints none", "gh", []string{"auth", "status"}, nil},
		{"gh api prints what it gets", "gh", []string{"api"}, Of(PrintsCredentials)},
		{"gh gist create reads files and uploads them", "gh", []string{"gist", "create"}, Of(SendsCredentials, ReadsFiles)},
		{"gh release upload reads files and uploads them", "gh", []string{"release", "upload"}, Of(SendsCredentials, ReadsFiles)},
		{"gcloud beta auth print-access-token", "gcloud", []string{"beta", "auth", "print-access-token"}, Of(PrintsCredentials)},
		{"gcloud alpha auth print-identity-token", "gcloud", []string{"alpha", "auth", "print-identity-token"}, Of(PrintsCredentials)},
		{"gcloud preview secrets versions access", "gcloud", []string{"preview", "secrets", "versions", "access"}, Of(PrintsCredentials)},
		{"gcloud beta secrets versions access", "gcloud", []string{"beta", "secrets", "versions", "access", "latest"}, Of(PrintsCredentials)},
		{"gcloud beta alone", "gcloud", []string{"beta"}, nil},
		{"gcloud beta beta auth print-access-token is no command", "gcloud", []string{"beta", "beta", "auth", "print-access-token"}, nil},
		{"a track under another CLI", "gh", []string{"beta", "auth", "token"}, nil},
		{"gcloud iam service-accounts sign-jwt", "gcloud", []string{"iam", "service-accounts", "sign-jwt"}, Of(PrintsCredentials, WritesFiles)},
		{"gcloud beta iam service-accounts sign-blob", "gcloud", []string{"beta", "iam", "service-accounts", "sign-blob"}, Of(PrintsCredentials, WritesFiles)},
		{"gcloud auth application-default print-access-token under beta", "gcloud", []string{"beta", "auth", "application-default", "print-access-token"}, Of(PrintsCredentials)},
		{"aws sso get-role-credentials", "aws", []string{"sso", "get-role-credentials"}, Of(PrintsCredentials)},
		{"aws ecr get-authorization-token", "aws", []string{"ecr", "get-authorization-token"}, Of(PrintsCredentials)},
		{"aws sts assume-role-with-web-identity", "aws", []string{"sts", "assume-role-with-web-identity"}, Of(PrintsCredentials)},
		{"aws sts assume-role-with-saml", "aws", []string{"sts", "assume-role-with-saml"}, Of(PrintsCredentials)},
		{"aws sts get-federation-token", "aws", []string{"sts", "get-federation-token"}, Of(PrintsCredentials)},
		{"aws secretsmanager get-secret-value", "aws", []string{"secretsmanager", "get-secret-value"}, Of(PrintsCredentials)},
		{"aws secretsmanager batch-get-secret-value", "aws", []string{"secretsmanager", "batch-get-secret-value"}, Of(PrintsCredentials)},
		{"aws ssm get-parameter", "aws", []string{"ssm", "get-parameter"}, Of(PrintsCredentials)},
		{"aws ssm get-parameters", "aws", []string{"ssm", "get-parameters"}, Of(PrintsCredentials)},
		{"aws ssm get-parameters-by-path", "aws", []string{"ssm", "get-parameters-by-path"}, Of(PrintsCredentials)},
		{"aws ssm describe-parameters prints no values", "aws", []string{"ssm", "describe-parameters"}, nil},
		{"aws ec2 get-password-data", "aws", []string{"ec2", "get-password-data"}, Of(PrintsCredentials)},
		{"aws configure as a whole", "aws", []string{"configure"}, Of(PrintsCredentials)},
		{"aws configure export-credentials", "aws", []string{"configure", "export-credentials"}, Of(PrintsCredentials)},
		{"aws configure list", "aws", []string{"configure", "list"}, Of(PrintsCredentials)},
		{"aws configure set", "aws", []string{"configure", "set"}, Of(SendsCredentials, RunsCode, PrintsCredentials)},
		{"aws s3 sync uploads", "aws", []string{"s3", "sync"}, Of(SendsCredentials, WritesFiles, ReadsFiles)},
		{"gcloud storage cp uploads", "gcloud", []string{"storage", "cp"}, Of(SendsCredentials, WritesFiles, ReadsFiles)},
		{"git credential-store get", "git", []string{"credential-store", "get"}, Of(PrintsCredentials)},
		{"git credential-store", "git", []string{"credential-store"}, Of(PrintsCredentials)},
		{"git credential-cache get", "git", []string{"credential-cache", "get"}, Of(PrintsCredentials)},
		{"gh pr list does nothing of the kind", "gh", []string{"pr", "list"}, nil},
		{"gcloud auth print-access-token", "gcloud", []string{"auth", "print-access-token"}, Of(PrintsCredentials)},
		{"gcloud auth application-default print-access-token", "gcloud", []string{"auth", "application-default", "print-access-token"}, Of(PrintsCredentials)},
		{"gcloud config config-helper", "gcloud", []string{"config", "config-helper"}, Of(PrintsCredentials)},
		{"aws configure get", "aws", []string{"configure", "get"}, Of(PrintsCredentials)},
		{"aws sts assume-role", "aws", []string{"sts", "assume-role"}, Of(PrintsCredentials)},
		{"aws ecr get-login-password", "aws", []string{"ecr", "get-login-password"}, Of(PrintsCredentials)},
		{"aws s3 cp uploads", "aws", []string{"s3", "cp"}, Of(SendsCredentials, WritesFiles, ReadsFiles)},
		{"aws s3 ls", "aws", []string{"s3", "ls"}, nil},
		{"aws s3 presign", "aws", []string{"s3", "presign"}, Of(PrintsCredentials)},
		{"gcloud iam service-accounts keys create", "gcloud", []string{"iam", "service-accounts", "keys", "create"}, Of(PrintsCredentials, WritesFiles)},
		{"git credential fill", "git", []string{"credential", "fill"}, Of(PrintsCredentials)},
		{"git config, reading or writing", "git", []string{"config"}, Of(SendsCredentials, RunsCode, PrintsCredentials)},
		{"git status", "git", []string{"status"}, nil},
		{"kubectl exec", "kubectl", []string{"exec"}, Of(RunsCode)},
		{"kubectl create token", "kubectl", []string{"create", "token"}, Of(PrintsCredentials)},
		{"kubectl proxy", "kubectl", []string{"proxy"}, Of(SendsCredentials)},
		{"kubectl get is not flagged as a whole", "kubectl", []string{"get", "secrets"}, nil},
		{"docker run", "docker", []string{"run"}, Of(RunsCode)},
		{"docker container run", "docker", []string{"container", "run"}, Of(RunsCode)},
		{"docker login", "docker", []string{"login"}, Of(SendsCredentials, WritesFiles)},
		{"a deeper path holds what its prefix holds", "gh", []string{"auth", "token", "extra"}, Of(PrintsCredentials)},
		{"a shorter path does not", "gh", []string{"auth"}, nil},
		{"no path", "gh", nil, nil},
		{"an unknown CLI", "mytool", []string{"auth", "token"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Subcommand(tt.cli, tt.sub); !slices.Equal(got, tt.want) {
				t.Errorf("Subcommand(%q, %q) = %v, want %v", tt.cli, tt.sub, got, tt.want)
			}
		})
	}
}

// TestEntriesAgree checks the catalog's own shape: ordered classes, plain
// flag names, and one answer for each (CLI, path, flag, Root).
func TestEntriesAgree(t *testing.T) {
	type key struct {
		cli, path, flag string
		root            bool
	}
	seen := map[key]Entry{}
	for _, e := range Entries() {
		name := squash(e.CLI + " " + strings.Join(e.Subcommand, " ") + " " + e.Flag)
		if !slices.Equal(e.Classes, Of(e.Classes...)) {
			t.Errorf("%s: Classes %v are not ordered as Of orders them (%v)", name, e.Classes, Of(e.Classes...))
		}
		if e.Flag != "" && !plainFlag(e.Flag) {
			t.Errorf("%s: %q is not a plain flag name", name, e.Flag)
		}
		for _, tok := range e.Subcommand {
			if tok == "" || strings.HasPrefix(tok, "-") || strings.ContainsAny(tok, " \t\n=") {
				t.Errorf("%s: subcommand token %q", name, tok)
			}
		}
		if e.Flag == "" && len(e.Classes) == 0 {
			t.Errorf("%s: a subcommand entry with no classes clears nothing", name)
		}
		k := key{e.CLI, strings.Join(e.Subcommand, "\x00"), e.Flag, e.Root}
		if prev, ok := seen[k]; ok && !slices.Equal(prev.Classes, e.Classes) {
			t.Errorf("%s: two entries disagree: %v and %v", name, prev.Classes, e.Classes)
		}
		seen[k] = e
	}
}

// TestSourcesAreListed checks that every help text has its line in
// testdata/SOURCES.md and every entry's source is a file there.
func TestSourcesAreListed(t *testing.T) {
	index, err := os.ReadFile(filepath.Join("testdata", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(string(index), "| `"+filepath.Base(f)+"` |") {
			t.Errorf("testdata/SOURCES.md has no line for %s", filepath.Base(f))
		}
	}
	for _, e := range Entries() {
		if !slices.Contains(files, filepath.Join("testdata", e.Source)) {
			t.Errorf("%s %s: source %q is not under testdata", e.CLI, e.Flag, e.Source)
		}
	}
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	link := func(name, target string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	realGit := filepath.Join(dir, "git")
	if err := os.WriteFile(realGit, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	realTool := filepath.Join(dir, "mytool")
	if err := os.WriteFile(realTool, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	g := link("g", realGit)
	chain := link("g2link", g)
	versioned := link("k", filepath.Join(dir, "kubectl-1.30"))
	if err := os.WriteFile(filepath.Join(dir, "kubectl-1.30"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	dangling := link("dangling", filepath.Join(dir, "nowhere"))
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	named := link(filepath.Join("bin", "git"), realTool)
	tests := []struct {
		name, key, binary, want string
	}{
		{"the binary's base name", "git", "/usr/bin/git", "git"},
		{"the binary wins over the key", "mygit", "/usr/bin/git", "git"},
		{"the key when the binary is unknown", "git", "/opt/wrapped-git", "git"},
		{"neither known", "fake", "/opt/fake", "fake"},
		{"no binary", "fake", "", "fake"},
		{"no binary, a known key", "git", "", "git"},
		{"a symlink under another name", "tools", g, "git"},
		{"a chain of symlinks", "tools", chain, "git"},
		{"a symlink to a versioned name", "tools", versioned, "kubectl"},
		{"a dangling symlink", "fake", dangling, "dangling"},
		{"a symlink loop", "fake", loop, "loop"},
		{"a symlink named like a catalogued CLI keeps that name", "x", named, "git"},
		{"git-2.39", "x", "/usr/local/bin/git-2.39", "git"},
		{"kubectl1.30", "x", "/usr/local/bin/kubectl1.30", "kubectl"},
		{"kubectl-v1.30.2", "x", "/usr/local/bin/kubectl-v1.30.2", "kubectl"},
		{"psql15", "x", "/usr/lib/postgresql/bin/psql15", "psql"},
		{"aws2", "x", "/usr/local/bin/aws2", "aws"},
		{"git_2", "x", "/opt/git_2", "git"},
		{"gcloud.528", "x", "/opt/gcloud.528", "gcloud"},
		{"an unknown versioned name stays itself", "x", "/usr/bin/python3.11", "python3.11"},
		{"a stripped name must be known", "x", "/usr/bin/h2", "h2"},
		{"digits alone", "x", "/usr/bin/2", "2"},
		{"a version in the middle is no suffix", "x", "/usr/bin/git2x", "git2x"},
		{"a known key after an unknown versioned name", "psql", "/usr/bin/pg15", "psql"},
		{"a binary that is only a folder", "git", "/", "git"},
		{"a control character in the name", "x", "/usr/bin/git\n2", "git\n2"},
		{"a right-to-left override", "x", "/usr/bin/\u202egit", "\u202egit"},
		{"a very long name", "x", "/usr/bin/" + strings.Repeat("a", 4096) + "1", strings.Repeat("a", 4096) + "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CLI(tt.key, tt.binary); got != tt.want {
				t.Errorf("CLI(%q, %.60q) = %.60q, want %.60q", tt.key, tt.binary, got, tt.want)
			}
		})
	}
}

// TestGcloudTracksAreInItsHelp keeps the release tracks the catalog skips
// to what gcloud's own help lists.
func TestGcloudTracksAreInItsHelp(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "gcloud_help.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text := squash(string(data))
	for _, track := range gcloudTracks {
		quote := track + " (" + strings.ToUpper(track) + ") " + strings.ToUpper(track[:1]) + track[1:] + " versions of gcloud commands."
		if !strings.Contains(text, quote) {
			t.Errorf("testdata/gcloud_help.txt does not say %q", quote)
		}
	}
}

// TestEntriesOverrideGenericNames checks that a CLI's own entries decide
// for its flags: a generic name never adds a class to a catalogued flag.
func TestEntriesOverrideGenericNames(t *testing.T) {
	for _, e := range Entries() {
		if e.Flag == "" || e.Root {
			continue
		}
		var own Classes
		for _, o := range Entries() {
			if o.CLI == e.CLI && o.Flag == e.Flag && o.holds(e.Subcommand) {
				own = own.Union(o.Classes)
			}
		}
		if got := Flag(e.CLI, e.Subcommand, e.Flag); !slices.Equal(got, own) {
			t.Errorf("%s %s %s: Flag = %v, its entries say %v", e.CLI, strings.Join(e.Subcommand, " "), e.Flag, got, own)
		}
	}
}

func TestClasses(t *testing.T) {
	cs := Of(ReadsFiles, SendsCredentials, ReadsFiles)
	if got := cs.String(); got != "sends-credentials, reads-files" {
		t.Errorf("String = %q", got)
	}
	if got := cs.Effect(); got != "sends your credentials to the host it names; reads a file it names" {
		t.Errorf("Effect = %q", got)
	}
	if !cs.Grave() || Of(WritesFiles, ReadsFiles).Grave() {
		t.Errorf("Grave: sends-credentials is grave, files alone are not")
	}
	for _, c := range All() {
		if c.Effect() == string(c) || c.Fix() == "" {
			t.Errorf("%s: no effect or fix text", c)
		}
	}
}

func TestExplain(t *testing.T) {
	got := Explain("git", nil, []string{"-c", "--verbose", "-c", "--exec-path=/tmp/x"})
	var flags []string
	for _, tc := range got {
		flags = append(flags, tc.Flag)
	}
	if !slices.Equal(flags, []string{"-c", "--exec-path"}) {
		t.Errorf("Explain flags = %q", flags)
	}
}

// FuzzLookup checks what must hold for any command line: no panic, classes
// ordered without repeats, a "=value" never changes the answer, a name
// that is no plain flag matches nothing, a subcommand holds what its
// prefixes hold, and Explain lists only what the lookups flag.
func FuzzLookup(f *testing.F) {
	seeds := []struct{ cli, sub, flag string }{
		{"psql", "", "-h"},
		{"psql", "", "--dbname=postgresql://u@evil/db"},
		{"aws", "s3 ls", "--endpoint-url=https://evil"},
		{"aws", "s3 ls", "--endpoint\u2010url"},
		{"aws", "", "--endpoint-u"},
		{"git", "", "-c"},
		{"git", "log", "-c"},
		{"git", "push", "--receive-p=x"},
		{"gh", "auth token", "-h"},
		{"gh", "pr list", "-h"},
		{"kubectl", "config view", "--raw"},
		{"docker", "container run", "-v"},
		{"curl", "", "--data=@/etc/passwd"},
		{"ssh", "", "-oProxyCommand=sh"},
		{"mytool", "x", "--*-file"},
		{"mytool", "", ""},
		{"", "", "="},
		{"git", "credential fill", "--\x00"},
		{"mytool", "", "--host\u202e"},
		{"mytool", "", "-" + strings.Repeat("-", 300)},
	}
	for _, s := range seeds {
		f.Add(s.cli, s.sub, s.flag)
	}
	f.Fuzz(func(t *testing.T, cli, subLine, flag string) {
		sub := strings.Fields(subLine)
		got := LookupFlag(cli, sub, flag)
		if !slices.Equal(got.Classes, Of(got.Classes...)) {
			t.Fatalf("LookupFlag classes %v are not ordered", got.Classes)
		}
		if len(got.Classes) > 0 && got.Why == "" {
			t.Fatalf("LookupFlag(%q, %q, %q) = %v with no Why", cli, sub, flag, got.Classes)
		}
		name := FlagName(flag)
		if name == flag {
			if again := LookupFlag(cli, sub, name+"=value"); !slices.Equal(again.Classes, got.Classes) {
				t.Fatalf("%q=value gives %v, %q gives %v", name, again.Classes, name, got.Classes)
			}
		}
		if again := LookupFlag(cli, sub, name); !slices.Equal(again.Classes, got.Classes) {
			t.Fatalf("%q gives %v, its name %q gives %v", flag, got.Classes, name, again.Classes)
		}
		if !plainFlag(name) && len(got.Classes) > 0 {
			t.Fatalf("%q is no plain flag but matches %v", name, got.Classes)
		}
		whole := Subcommand(cli, sub)
		if !slices.Equal(whole, Of(whole...)) {
			t.Fatalf("Subcommand classes %v are not ordered", whole)
		}
		for i := range sub {
			if part := Subcommand(cli, sub[:i]); !slices.Equal(whole.Union(part), whole) {
				t.Fatalf("%q holds %v but its prefix %q holds %v", sub, whole, sub[:i], part)
			}
		}
		for _, tc := range Explain(cli, sub, []string{flag, flag}) {
			if len(tc.Classes) == 0 {
				t.Fatalf("Explain lists %q with no classes", tc.Flag)
			}
			if tc.Flag != "" && !slices.Equal(tc.Classes, Flag(cli, sub, tc.Flag)) {
				t.Fatalf("Explain says %v for %q, Flag says %v", tc.Classes, tc.Flag, Flag(cli, sub, tc.Flag))
			}
		}
	})
}
