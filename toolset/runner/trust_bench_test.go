package runner

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// benchProgram is a program as deep as a typical tool's binary.
func benchProgram(b *testing.B) string {
	for _, p := range []string{"/usr/bin/git", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	b.Skip("neither /usr/bin/git nor /usr/bin/true exists")
	return ""
}

// BenchmarkCheckProgram is the pre-start check alone on /usr/bin/git.
func BenchmarkCheckProgram(b *testing.B) {
	p := benchProgram(b)
	for b.Loop() {
		if err := CheckProgram(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRunWithStartCheck weighs the check against a whole start: a Run
// of /bin/true with it and without it, side by side, and their ratio.
func BenchmarkRunWithStartCheck(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true on PATH")
	}
	run := func(b *testing.B) {
		ctx := context.Background()
		for b.Loop() {
			if res := Run(ctx, Command{Argv: []string{truePath}}); res.Err != nil || res.ExitCode != 0 {
				b.Fatalf("run %s: %+v", truePath, res)
			}
		}
	}
	var with, without testing.BenchmarkResult // the last (largest) run of each
	b.Run("with-check", func(b *testing.B) { run(b); with = benchResult(b) })
	b.Run("without-check", func(b *testing.B) {
		startCheck = func(*exec.Cmd) error { return nil }
		defer func() { startCheck = checkStart }()
		run(b)
		without = benchResult(b)
	})
	if with.N > 0 && without.N > 0 {
		ratio := float64(with.T.Nanoseconds()) / float64(with.N) / (float64(without.T.Nanoseconds()) / float64(without.N))
		fmt.Printf("Run(%s): %.0f ns/op with the check, %.0f ns/op without: ratio %.4f\n",
			truePath, float64(with.T.Nanoseconds())/float64(with.N), float64(without.T.Nanoseconds())/float64(without.N), ratio)
	}
}

// benchResult is what b measured so far: its iterations and elapsed time.
func benchResult(b *testing.B) testing.BenchmarkResult {
	return testing.BenchmarkResult{N: b.N, T: b.Elapsed()}
}
