package config

import "github.com/wraptool/wraptool/policy"

// Policy compiles the config's tools into a policy. helps, from
// introspection, types and describes flags and may be nil.
func (c *Config) Policy(helps policy.Helps) (*policy.Policy, error) {
	tools := make([]policy.Tool, 0, len(c.Tools))
	for _, name := range sortedKeys(c.Tools) {
		t := c.Tools[name]
		tools = append(tools, policy.Tool{Name: name, Binary: t.Binary, Allow: t.Allow, Deny: t.Deny})
	}
	return policy.New(tools, helps)
}
