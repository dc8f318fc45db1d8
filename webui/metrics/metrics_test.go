package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

type fakeSource struct{}

func (fakeSource) PendingRequests() int { return 3 }
func (fakeSource) ActiveGrants() int    { return 2 }
func (fakeSource) Sessions() int        { return 5 }
func (fakeSource) Upstreams() map[string]string {
	return map[string]string{"fs": "running", "db": "backoff"}
}
func (fakeSource) AuditWaits() uint64  { return 7 }
func (fakeSource) AuditLost() uint64   { return 0 }
func (fakeSource) Confinement() string { return "landlock (ABI 7)" }

// A scrape shows what was pushed and what the Source says, under the
// wraptool_ names, in the Prometheus text format.
func TestScrape(t *testing.T) {
	t.Parallel()
	m := New(fakeSource{})
	m.Call("git_pull", "allowed", 120*time.Millisecond)
	m.Call("git_pull", "allowed", 80*time.Millisecond)
	m.Call("git_push", "denied", time.Millisecond)
	m.Loaded(time.Unix(1_800_000_000, 0), false)
	m.Loaded(time.Unix(1_800_000_100, 0), true)
	m.Rejected()
	w := httptest.NewRecorder()
	m.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(w.Body)
	text := string(body)
	for _, want := range []string{
		`wraptool_calls_total{decision="allowed",tool="git_pull"} 2`,
		`wraptool_calls_total{decision="denied",tool="git_push"} 1`,
		`wraptool_call_duration_seconds_count{tool="git_pull"} 2`,
		`wraptool_call_duration_seconds_bucket{tool="git_pull",le="0.25"} 2`,
		`wraptool_reloads_total{outcome="ok"} 1`,
		`wraptool_reloads_total{outcome="rejected"} 1`,
		`wraptool_last_reload_success_timestamp_seconds 1.8000001e+09`,
		`wraptool_pending_requests 3`,
		`wraptool_active_grants 2`,
		`wraptool_sessions 5`,
		`wraptool_upstream_up{server="fs",state="running"} 1`,
		`wraptool_upstream_up{server="db",state="backoff"} 0`,
		`wraptool_audit_queue_waits_total 7`,
		`wraptool_audit_lines_lost_total 0`,
		`wraptool_confinement{mode="landlock (ABI 7)"} 1`,
		`go_goroutines `,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
}

// Two Metrics never share counts (each has its own registry), and a nil
// Metrics ignores events.
func TestMetricsAreSeparate(t *testing.T) {
	t.Parallel()
	a, b := New(nil), New(nil)
	a.Call("x", "allowed", time.Second)
	w := httptest.NewRecorder()
	b.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(w.Body.String(), `tool="x"`) {
		t.Errorf("b counted a's call")
	}
	var none *Metrics
	none.Call("x", "allowed", time.Second)
	none.Loaded(time.Now(), true)
	none.Rejected()
}
