# Recipes mirror CI (.ci/run). `just` is optional: every recipe is a plain
# command you can run yourself, and the README's two commands need none.

set shell := ["bash", "-euo", "pipefail", "-c"]

# Run every CI gate.
ci: fmt-check vet tidy-check test

# Build the wraptool binary into ./wraptool.
build:
    go build -o wraptool ./cmd/wraptool

# Fail when gofmt would change a file.
fmt-check:
    out=$(gofmt -l $(git ls-files '*.go')); if [ -n "$out" ]; then echo "gofmt would change:"; echo "$out"; exit 1; fi

vet:
    go vet ./...

# The README's test command, with the race detector as CI runs it.
test:
    go test -race ./...

# Run every fuzz target for `time` each (their seed corpora run in every go test).
fuzz time="30s":
    for pkg in $(go list ./...); do \
      for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do \
        echo "== $pkg $target"; \
        go test "$pkg" -run '^$' -fuzz "^${target}\$" -fuzztime {{time}}; \
      done; \
    done

# Go benchmarks with allocation counts.
bench:
    go test -run '^$' -bench . -benchmem ./...

# Fail when `go mod tidy` would change go.mod or go.sum.
tidy-check:
    cp go.mod /tmp/wraptool-go.mod.bak; cp go.sum /tmp/wraptool-go.sum.bak
    go mod tidy
    if ! git diff --quiet -- go.mod go.sum; then git diff -- go.mod go.sum; cp /tmp/wraptool-go.mod.bak go.mod; cp /tmp/wraptool-go.sum.bak go.sum; echo "go mod tidy changes go.mod/go.sum"; exit 1; fi
