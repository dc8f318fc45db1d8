package runner

import "testing"

// A launcher's report reaches the call's error as one line of valid text,
// whatever bytes it held.
func TestPrintableLauncherReport(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, in, want string }{
		{"plain text stays", "exec /x: permission denied", "exec /x: permission denied"},
		{"a newline cannot start a second line", "a\nFAKE: ok", "a?FAKE: ok"},
		{"terminal escapes are defused", "\x1b[2Jx", "?[2Jx"},
		{"invalid UTF-8 is replaced", "a\xff\xfeb", "a?b"},
		{"a NUL is replaced", "a\x00b", "a?b"},
		{"valid non-ASCII stays", "dossier é", "dossier é"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := printable([]byte(tc.in)); got != tc.want {
				t.Errorf("printable(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
