# Recipes mirror CI (.ci/run). `just` is optional: every recipe is a plain
# command you can run yourself, and the README's two commands need none.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Run every CI gate.
ci: fmt-check vet staticcheck tidy-check test

# staticcheck, pinned as .ci/run pins it.
staticcheck:
    GOBIN="$(go env GOPATH)/bin" go install honnef.co/go/tools/cmd/staticcheck@v0.8.2
    "$(go env GOPATH)/bin/staticcheck" ./...

# Build the wraptool binary into ./wraptool.
build:
    go build -o wraptool ./cmd/wraptool

# Fail when gofmt would change a file.
fmt-check:
    out=$(gofmt -l $(git ls-files '*.go')); if [ -n "$out" ]; then echo "gofmt would change:"; echo "$out"; exit 1; fi

vet:
    go vet ./...
    GOOS=darwin go build ./...

# The README's test command, with the race detector as CI runs it.
test:
    go test -race ./...

# The edit loop (under a minute): one end-to-end test per surface of the
# real binary, the slowest scenarios skipped, each saying what it covers.
test-short:
    go test -short ./...

# Run every fuzz target for `time` each (their seed corpora run in every go test).
fuzz time="30s":
    for pkg in $(go list ./...); do \
      for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do \
        echo "== $pkg $target"; \
        go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime {{time}}; \
      done; \
    done

# The one report behind the figures in docs/performance.md, measured side by side in one run:
# policy evaluation, config load of 500 × 10, the server's CPU and bytes per
# call (from outside the process), p50/p99 against direct exec and a bare
# go-sdk server, 16-client throughput, reload, the upstream bridge,
# connect against /mcp, idle RSS, RSS with 1,000 sessions and with 500 × 10.
bench:
    WRAPTOOL_BENCH=1 go test ./integration -run '^TestBenchReport$' -count=1 -v -timeout 20m | sed -n '/^wraptool bench report/,/^--- /p'

# Every Go benchmark, and the detailed side-by-side reports behind `bench`:
# latency and reload, introspection start-up, the upstream bridge against
# its npm peers, and connect against mcp-remote and supergateway.
bench-detail:
    go test -run '^$' -bench . -benchmem ./...
    WRAPTOOL_BENCH=1 go test ./integration -run '^TestLatencyReport$' -count=1 -v | sed -n '/^wraptool latency/,/list_changed/p'
    WRAPTOOL_BENCH=1 go test ./integration -run '^TestIntrospectionReport$' -count=1 -v | sed -n '/^wraptool introspection/,/list_changed/p'
    WRAPTOOL_BENCH=1 go test ./integration -run '^TestUpstreamReport$' -count=1 -v | sed -n '/^wraptool upstream/,/^--- /p'
    WRAPTOOL_BENCH=1 go test ./integration -run '^TestConnectReport$' -count=1 -v | sed -n '/^wraptool connect/,/^--- /p'

# Fail when `go mod tidy` would change go.mod or go.sum.
tidy-check:
    cp go.mod /tmp/wraptool-go.mod.bak; cp go.sum /tmp/wraptool-go.sum.bak
    go mod tidy
    if ! git diff --quiet -- go.mod go.sum; then git diff -- go.mod go.sum; cp /tmp/wraptool-go.mod.bak go.mod; cp /tmp/wraptool-go.sum.bak go.sum; echo "go mod tidy changes go.mod/go.sum"; exit 1; fi

# The official MCP conformance suite's generic server scenarios against /mcp
# of a server without a token (needs npm; brings Node 22 from the npm
# registry). Name scenarios to run only those.
conformance *scenarios:
    integration/node/conformance.sh {{scenarios}}
