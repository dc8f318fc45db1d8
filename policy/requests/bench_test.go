package requests

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wraptool/wraptool/policy/jsonl"
)

// BenchmarkSubmitLargeLog times one Submit into a log that already holds
// prior requests, each with a 4 KiB rationale and decided (so the pending
// limit is never reached). Through one Log the time stays flat as the log
// grows; the package-level Submit, which folds the whole file each time, is
// shown beside it. Each Submit is decided after the timer stops.
func BenchmarkSubmitLargeLog(b *testing.B) {
	rationale := strings.Repeat("<>", 2048)
	for _, prior := range []int{0, 2000} {
		for _, via := range []string{"Log", "path"} {
			b.Run(fmt.Sprintf("%s/prior=%d", via, prior), func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "requests.jsonl")
				writeDecided(b, path, prior, rationale)
				l := Open(path)
				submit := l.Submit
				if via == "path" {
					submit = func(ctx context.Context, r Request, now time.Time) (Submitted, error) {
						return Submit(ctx, path, r, now)
					}
				}
				// A Log's first call folds the whole file; time the calls after.
				if _, err := l.Submit(b.Context(), Request{Tool: "warm", Rationale: rationale}, t0); err != nil {
					b.Fatal(err)
				}
				i := 0
				for b.Loop() {
					s, err := submit(b.Context(), Request{Tool: "bench", Subcommand: []string{strconv.Itoa(i)}, Rationale: rationale}, t0)
					b.StopTimer()
					if err != nil || s.Existing {
						b.Fatalf("Submit = %+v, %v; want a new request", s, err)
					}
					if err := l.Decide(b.Context(), s.ID, Decision{Status: StatusDenied, Reason: "", Applied: false, DecidedBy: "cli"}, t0); err != nil {
						b.Fatal(err)
					}
					i++
					b.StartTimer()
				}
				b.ReportMetric(float64(fileSizeB(b, path))/(1<<20), "MiB-log")
			})
		}
	}
}

// writeDecided writes n requests, each followed by its denial.
func writeDecided(b *testing.B, path string, n int, rationale string) {
	b.Helper()
	var buf bytes.Buffer
	for i := range n {
		id := fmt.Sprintf("req_%08x", i)
		for _, v := range []any{
			Record{ID: id, CreatedAt: t0.UTC(), Tool: "prior", Subcommand: []string{strconv.Itoa(i)}, Flags: []string{}, Rationale: rationale, Status: StatusPending},
			decisionLine{ID: id, Status: StatusDenied, DecidedAt: t0.UTC()},
		} {
			line, err := jsonl.Encode(v)
			if err != nil {
				b.Fatal(err)
			}
			buf.Write(line)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
}

func fileSizeB(b *testing.B, path string) int64 {
	b.Helper()
	info, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return info.Size()
}
