package policy

import "testing"

func TestValidToken(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want bool
	}{
		{"git", true}, {"compute", true}, {"set-url", true}, {"a_b", true}, {"0day", true},
		{"", false}, {"-x", false}, {"_x", false}, {"a.b", false}, {"a b", false},
		{"a/b", false}, {"ä", false}, {"a;b", false}, {"a\x00", false},
	}
	for _, tc := range cases {
		if got := ValidToken(tc.in); got != tc.want {
			t.Errorf("ValidToken(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestValidFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in   string
		want bool
	}{
		{"-m", true}, {"-1", true}, {"--force", true}, {"--set-upstream", true}, {"--a.b_c", true}, {"--x", true},
		{"", false}, {"-", false}, {"--", false}, {"force", false}, {"-rf", false}, {"---x", false},
		{"--a b", false}, {"--x=1", false}, {"--.x", false}, {"-.", false}, {"--ä", false},
	}
	for _, tc := range cases {
		if got := ValidFlag(tc.in); got != tc.want {
			t.Errorf("ValidFlag(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	tools := []struct {
		tool string
		sub  []string
		want string
	}{
		{"git", []string{"pull"}, "git_pull"},
		{"gcloud", []string{"compute", "instances", "list"}, "gcloud_compute_instances_list"},
		{"git", nil, "git"},
	}
	for _, tc := range tools {
		if got := ToolName(tc.tool, tc.sub); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.tool, tc.sub, got, tc.want)
		}
	}
	props := map[string]string{"--set-upstream": "set-upstream", "-m": "m", "--a.b": "a.b"}
	for flag, want := range props {
		if got := PropertyName(flag); got != want {
			t.Errorf("PropertyName(%q) = %q, want %q", flag, got, want)
		}
	}
	if got := AnchorPattern("[a-z]+"); got != "^(?:[a-z]+)$" {
		t.Errorf("AnchorPattern = %q", got)
	}
}
