package connect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// procHeader is the first line of /proc/net/tcp.
const procHeader = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"

// procRow formats a row as the kernel does: the address's 32-bit words in
// the host's byte order order, as hex.
func procRow(order binary.ByteOrder, ip string, port int, state string, uid int) string {
	addr := net.ParseIP(ip)
	if v4 := addr.To4(); v4 != nil && !strings.Contains(ip, ":") {
		addr = v4
	}
	var hexIP strings.Builder
	for i := 0; i < len(addr); i += 4 {
		fmt.Fprintf(&hexIP, "%08X", order.Uint32(addr[i:i+4]))
	}
	remote := strings.Repeat("0", len(hexIP.String())) + ":0000"
	return fmt.Sprintf("   0: %s:%04X %s %s 00000000:00000000 00:00000000 00000000 %5d        0 12345 1 0000000000000000 100 0 0 10 0\n",
		hexIP.String(), port, remote, state, uid)
}

func TestParseListeners(t *testing.T) {
	t.Parallel()
	le := binary.LittleEndian
	tests := []struct {
		name  string
		order binary.ByteOrder
		table string
		want  []string // "ip port uid"
	}{
		{"a loopback IPv4 listener, little-endian host", le, procHeader + "   0: 0100007F:2205 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n",
			[]string{"127.0.0.1 8709 1000"}},
		{"the same row on a big-endian host", binary.BigEndian, procHeader + "   0: 7F000001:2205 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1\n",
			[]string{"127.0.0.1 8709 1000"}},
		{"the wildcard", le, procHeader + procRow(le, "0.0.0.0", 8717, "0A", 0), []string{"0.0.0.0 8717 0"}},
		{"IPv6 rows", le, procHeader + procRow(le, "::1", 8717, "0A", 1000) + procRow(le, "::", 80, "0A", 33),
			[]string{"::1 8717 1000", ":: 80 33"}},
		{"an IPv4-mapped IPv6 row", le, procHeader + procRow(le, "::ffff:127.0.0.1", 8717, "0A", 1000), []string{"127.0.0.1 8717 1000"}},
		{"established and time-wait rows are not listeners", le, procHeader + procRow(le, "127.0.0.1", 8717, "01", 1000) + procRow(le, "127.0.0.1", 8717, "06", 0),
			nil},
		{"the header is never a row, even without others", le, procHeader, nil},
		{"malformed rows are skipped, good ones kept", le, procHeader +
			"garbage\n" +
			"   0: 0100007F 00000000:0000 0A 0 0 0 1000\n" + // no port
			"   0: 0100007G:2205 00000000:0000 0A 0 0 0 1000\n" + // bad hex
			"   0: 0100007F:22055 00000000:0000 0A 0 0 0 1000\n" + // long port
			"   0: 01007F:2205 00000000:0000 0A 0 0 0 1000\n" + // short address
			"   0: 0100007F:2205 00000000:0000 0A 0 0 0 -1\n" + // negative uid
			"   0: 0100007F:2205 00000000:0000 0A 0 0 0 99999999999\n" + // uid beyond 32 bits
			"   0: 0100007F:2205 00000000:0000 0A\n" + // too few fields
			"\n" +
			"   0: 0100007F:2205 00000000:0000 0A 0 0 0 1000 0 1\n",
			[]string{"127.0.0.1 8709 1000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rows, err := parseListeners(strings.NewReader(tt.table), tt.order)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows {
				got = append(got, fmt.Sprintf("%v %d %d", r.ip, r.port, r.uid))
			}
			if strings.Join(got, ";") != strings.Join(tt.want, ";") {
				t.Errorf("listeners = %q, want %q", got, tt.want)
			}
		})
	}
}

// A row longer than the scanner takes ends the table with an error: the
// check then refuses (ErrOwnerUnknown) rather than passing on part of it.
func TestParseListenersRefusesAnOverlongRow(t *testing.T) {
	t.Parallel()
	_, err := parseListeners(strings.NewReader(procHeader+strings.Repeat("x", 100<<10)+"\n"), binary.LittleEndian)
	if err == nil {
		t.Fatal("parseListeners of a 100 KiB row = nil error, want one")
	}
}

func TestJudge(t *testing.T) {
	t.Parallel()
	const me, other = 1000, 1001
	row := func(ip string, port, uid int) listener {
		addr := net.ParseIP(ip)
		if v4 := addr.To4(); v4 != nil && !strings.Contains(ip, ":") {
			addr = v4
		}
		return listener{ip: addr, port: port, uid: uid}
	}
	v4 := &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8717}
	v6 := &net.TCPAddr{IP: net.ParseIP("::1"), Port: 8717}
	tests := []struct {
		name string
		addr *net.TCPAddr
		rows []listener
		want error
	}{
		{"our listener on the address passes", v4, []listener{row("127.0.0.1", 8717, me)}, nil},
		{"another user's listener on the address is refused", v4, []listener{row("127.0.0.1", 8717, other)}, ErrForeignOwner},
		{"root's listener is not ours either", v4, []listener{row("127.0.0.1", 8717, 0)}, ErrForeignOwner},
		{"our 0.0.0.0 listener takes a 127.0.0.1 dial", v4, []listener{row("0.0.0.0", 8717, me)}, nil},
		{"another user's 0.0.0.0 listener is refused", v4, []listener{row("0.0.0.0", 8717, other)}, ErrForeignOwner},
		{"our dual-stack :: listener takes a 127.0.0.1 dial", v4, []listener{row("::", 8717, me)}, nil},
		{"another user's :: listener is refused for IPv4", v4, []listener{row("::", 8717, other)}, ErrForeignOwner},
		{"an exact listener wins over a foreign wildcard, as in the kernel", v4, []listener{row("0.0.0.0", 8717, other), row("127.0.0.1", 8717, me)}, nil},
		{"a foreign exact listener loses even beside our wildcard", v4, []listener{row("0.0.0.0", 8717, me), row("127.0.0.1", 8717, other)}, ErrForeignOwner},
		{"wildcards of two users fail closed", v4, []listener{row("0.0.0.0", 8717, me), row("::", 8717, other)}, ErrForeignOwner},
		{"an IPv4-mapped listener is exact for its IPv4 address", v4, []listener{row("::ffff:127.0.0.1", 8717, other)}, ErrForeignOwner},
		{"listeners on other ports do not count", v4, []listener{row("127.0.0.1", 8718, me)}, ErrOwnerUnknown},
		{"listeners on other addresses do not count", v4, []listener{row("127.0.0.2", 8717, other)}, ErrOwnerUnknown},
		{"no listener at all is unknown", v4, nil, ErrOwnerUnknown},
		{"our ::1 listener passes an IPv6 dial", v6, []listener{row("::1", 8717, me)}, nil},
		{"a 0.0.0.0 listener does not take IPv6", v6, []listener{row("0.0.0.0", 8717, other)}, ErrOwnerUnknown},
		{"another user's :: listener is refused for IPv6", v6, []listener{row("::", 8717, other)}, ErrForeignOwner},
		{"SO_REUSEPORT siblings of ours pass", v4, []listener{row("127.0.0.1", 8717, me), row("127.0.0.1", 8717, me)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := judge(tt.addr, tt.rows, me)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("judge = %v, want %v", err, tt.want)
			}
			if errors.Is(err, ErrForeignOwner) && !strings.Contains(err.Error(), tt.addr.String()) {
				t.Errorf("refusal %q does not name the address %s", err, tt.addr)
			}
		})
	}
}

// checkOwner dials ln and runs the check on the connection.
func checkOwner(t *testing.T, o Owner, network, addr string) error {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return o.Check(c)
}

func TestOwnerCheckTCP(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the owner check reads Linux's /proc/net/tcp")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	port := ln.Addr().(*net.TCPAddr).Port
	me := os.Getuid()

	t.Run("the kernel's own table shows our listener as ours", func(t *testing.T) {
		if err := checkOwner(t, Owner{UID: me}, "tcp", addr); err != nil {
			t.Errorf("Check = %v, want nil", err)
		}
	})
	t.Run("the kernel's own table refuses a listener when we claim another uid", func(t *testing.T) {
		err := checkOwner(t, Owner{UID: me + 1}, "tcp", addr)
		if !errors.Is(err, ErrForeignOwner) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Check = %v, want ErrForeignOwner naming %s", err, addr)
		}
	})
	fake := func(t *testing.T, tcp, tcp6 string) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "tcp"), []byte(procHeader+tcp), 0o600); err != nil {
			t.Fatal(err)
		}
		if tcp6 != "" {
			if err := os.WriteFile(filepath.Join(dir, "tcp6"), []byte(procHeader+tcp6), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	t.Run("a foreign owner in the table is refused", func(t *testing.T) {
		dir := fake(t, procRow(binary.NativeEndian, "127.0.0.1", port, "0A", me+7), "")
		if err := checkOwner(t, Owner{UID: me, ProcNet: dir}, "tcp", addr); !errors.Is(err, ErrForeignOwner) {
			t.Errorf("Check = %v, want ErrForeignOwner", err)
		}
	})
	t.Run("a foreign wildcard in tcp6 is refused when nothing is exact", func(t *testing.T) {
		dir := fake(t, "", procRow(binary.NativeEndian, "::", port, "0A", me+7))
		if err := checkOwner(t, Owner{UID: me, ProcNet: dir}, "tcp", addr); !errors.Is(err, ErrForeignOwner) {
			t.Errorf("Check = %v, want ErrForeignOwner", err)
		}
	})
	t.Run("a table without the listener is unknown", func(t *testing.T) {
		dir := fake(t, procRow(binary.NativeEndian, "127.0.0.1", port+1, "0A", me), "")
		if err := checkOwner(t, Owner{UID: me, ProcNet: dir}, "tcp", addr); !errors.Is(err, ErrOwnerUnknown) {
			t.Errorf("Check = %v, want ErrOwnerUnknown", err)
		}
	})
	t.Run("no table at all is unknown", func(t *testing.T) {
		if err := checkOwner(t, Owner{UID: me, ProcNet: t.TempDir()}, "tcp", addr); !errors.Is(err, ErrOwnerUnknown) {
			t.Errorf("Check = %v, want ErrOwnerUnknown", err)
		}
	})
}

func TestOwnerCheckUnix(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the owner check reads Linux's SO_PEERCRED")
	}
	dir, err := os.MkdirTemp("", "wtb")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := checkOwner(t, Owner{UID: os.Getuid()}, "unix", path); err != nil {
		t.Errorf("Check of our own socket = %v, want nil", err)
	}
	err = checkOwner(t, Owner{UID: os.Getuid() + 1}, "unix", path)
	if !errors.Is(err, ErrForeignOwner) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("Check claiming another uid = %v, want ErrForeignOwner naming %s and our pid", err, path)
	}
}
