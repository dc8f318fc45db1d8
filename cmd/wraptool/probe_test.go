package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"

	"github.com/wraptool/wraptool/cmd/wraptool/connect"
)

// TestProbeWraptoolChecksTheListenersOwner shows `up` and `setup` believe
// a listener that answers /healthz as a wraptool only when it belongs to
// the user running them: any program can answer "ok" and a confinement
// line, and `up` saying "already serving" sends the operator's clients,
// token and all, to it. Before, an impostor on mcp.listen made `up` exit 0
// with "wraptool is already serving MCP".
func TestProbeWraptoolChecksTheListenersOwner(t *testing.T) {
	t.Parallel()
	impostor := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\nconfinement: landlock (ABI 7)\n"))
	}))
	defer impostor.Close()
	refuse := func(net.Conn) error { return connect.ErrForeignOwner }
	for _, tc := range []struct {
		name  string
		owner func(net.Conn) error
		want  bool
	}{
		{"a listener of this user", func(net.Conn) error { return nil }, true},
		{"a listener of another user", refuse, false},
	} {
		if got := probeWraptoolWith(t.Context(), impostor.URL, tc.owner, ""); got != tc.want {
			t.Errorf("%s: probe = %v, want %v", tc.name, got, tc.want)
		}
	}
	if runtime.GOOS == "linux" {
		// The real check: this test's own listener belongs to this
		// user, not to another.
		if !probeWraptoolWith(t.Context(), impostor.URL, connect.Owner{UID: os.Getuid()}.Check, "") {
			t.Error("the owner check refused this user's own listener")
		}
		if probeWraptoolWith(t.Context(), impostor.URL, connect.Owner{UID: os.Getuid() + 1}.Check, "") {
			t.Error("the owner check accepted a listener as another user's")
		}
	}
}
