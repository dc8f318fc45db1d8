// Package integration holds end-to-end tests against the built wraptool
// binary. TestMain builds it once with go build; each test runs it as a child
// process with a controlled environment, as an operator would, and checks its
// stdout, stderr, exit status and what it left on disk.
package integration
