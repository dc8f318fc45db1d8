package connect

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Owner checks that the listening end of a connection belongs to one user,
// before anything is sent on it: for a unix socket, the
// peer credentials the kernel recorded when the server called listen
// (SO_PEERCRED); for TCP, the owner of the listening socket in
// /proc/net/tcp and /proc/net/tcp6 on Linux. macOS offers the unix
// socket's (LOCAL_PEERCRED) but no owner of a TCP listener, which the proof
// alone vouches for there (owner_darwin.go); elsewhere Check refuses with
// ErrOwnerUnknown (owner_other.go).
//
// The zero value checks against uid 0; connect sets UID to os.Getuid().
type Owner struct {
	// UID is the user the listener must belong to.
	UID int
	// ProcNet is the folder holding the kernel's tcp and tcp6 tables; ""
	// means /proc/net. Tests point it at tables of their own.
	ProcNet string
}

// listener is one LISTEN row of /proc/net/tcp or tcp6.
type listener struct {
	ip   net.IP // 4 bytes for tcp, 16 for tcp6
	port int
	uid  int
}

// checkTCP finds who listens where c is connected and refuses any owner but
// o.UID. Linux hands a connection to the listener bound to its exact
// address if there is one (a tcp6 socket bound to ::ffff:a.b.c.d counts for
// a.b.c.d), else to a wildcard one (0.0.0.0, or :: which also takes IPv4
// unless it is IPv6-only, which /proc does not show); so the rows of the most
// specific kind that exists must all be the user's (several sockets can
// share a port with SO_REUSEPORT, which the kernel allows only within one
// user). A wildcard row of another user beside one of ours fails closed.
func (o Owner) checkTCP(c net.Conn) error {
	addr, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return fmt.Errorf("%w: %v is not a TCP address", ErrOwnerUnknown, c.RemoteAddr())
	}
	dir := o.ProcNet
	if dir == "" {
		dir = "/proc/net"
	}
	var rows []listener
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			if os.IsNotExist(err) && name == "tcp6" {
				continue // a kernel without IPv6
			}
			return fmt.Errorf("%w: %v", ErrOwnerUnknown, err)
		}
		more, err := parseListeners(f, binary.NativeEndian)
		f.Close()
		if err != nil {
			return fmt.Errorf("%w: read %s: %v", ErrOwnerUnknown, filepath.Join(dir, name), err)
		}
		rows = append(rows, more...)
	}
	return judge(addr, rows, o.UID)
}

// judge applies checkTCP's rule to the listener rows.
func judge(addr *net.TCPAddr, rows []listener, want int) error {
	exact, wild := listenersFor(addr, rows)
	candidates := exact
	if len(candidates) == 0 {
		candidates = wild
	}
	if len(candidates) == 0 {
		return fmt.Errorf("%w: no socket listens on %v in /proc/net/tcp or tcp6", ErrOwnerUnknown, addr)
	}
	var others []string
	for _, l := range candidates {
		if l.uid != want {
			others = append(others, strconv.Itoa(l.uid))
		}
	}
	if len(others) > 0 {
		slices.Sort(others)
		return fmt.Errorf("%w: the socket listening on %v belongs to uid %s, not to you (uid %d)",
			ErrForeignOwner, addr, strings.Join(slices.Compact(others), ", "), want)
	}
	return nil
}

// listenersFor splits the rows that could have taken a connection to addr
// into those bound to its address exactly and the wildcard ones.
func listenersFor(addr *net.TCPAddr, rows []listener) (exact, wild []listener) {
	v4 := addr.IP.To4()
	for _, l := range rows {
		if l.port != addr.Port {
			continue
		}
		switch {
		case v4 != nil && len(l.ip) == net.IPv4len && l.ip.Equal(v4),
			v4 != nil && len(l.ip) == net.IPv6len && l.ip.To4() != nil && l.ip.To4().Equal(v4),
			v4 == nil && len(l.ip) == net.IPv6len && l.ip.Equal(addr.IP):
			exact = append(exact, l)
		case l.ip.IsUnspecified() && (v4 != nil || len(l.ip) == net.IPv6len):
			// A v4 wildcard takes only v4; a v6 wildcard takes both.
			wild = append(wild, l)
		}
	}
	return exact, wild
}

// parseListeners reads the LISTEN rows (state 0A) of a /proc/net/tcp or
// tcp6 table. Addresses there are the kernel's 32-bit words printed in the
// host's byte order, so order is the host's (a parameter, for tests). Rows
// that do not parse are skipped: a row the check cannot read cannot make
// it pass, because a connection always has its listener's row.
func parseListeners(r io.Reader, order binary.ByteOrder) ([]listener, error) {
	var out []listener
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	first := true
	for sc.Scan() {
		if first { // the header
			first = false
			continue
		}
		f := bytes.Fields(sc.Bytes())
		// sl local rem st tx:rx tr:when retrnsmt uid ...
		if len(f) < 8 || string(f[3]) != "0A" {
			continue
		}
		ip, port, ok := parseAddr(string(f[1]), order)
		if !ok {
			continue
		}
		uid, err := strconv.ParseUint(string(f[7]), 10, 32)
		if err != nil {
			continue
		}
		out = append(out, listener{ip: ip, port: port, uid: int(uid)})
	}
	return out, sc.Err()
}

// parseAddr decodes "0100007F:1F90" (tcp) or 32 hex digits and a port
// (tcp6).
func parseAddr(s string, order binary.ByteOrder) (net.IP, int, bool) {
	host, portHex, ok := strings.Cut(s, ":")
	if !ok || len(portHex) != 4 || (len(host) != 8 && len(host) != 32) {
		return nil, 0, false
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return nil, 0, false
	}
	raw, err := hex.DecodeString(host)
	if err != nil {
		return nil, 0, false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		order.PutUint32(ip[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	return ip, int(port), true
}
