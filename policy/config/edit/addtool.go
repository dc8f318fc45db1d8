package edit

import "github.com/wraptool/wraptool/policy/config"

// AddTool adds nt to the config at path and returns how many rules it
// wrote: catalog rules as comments, or with nt.Preset the preset's allow
// rules, live. An existing tools.<name> is refused with
// config.ErrToolExists; a bad name or binary with config.ErrInvalidToolName
// or config.ErrBadBinary.
//
// As ApplyRequest does, it splices the new lines into the file's own text
// (every other byte stays as written), parses the result, which must load
// as any config does and differ from the old one by the new tool alone,
// with no rule or exactly the preset's (config.PlanAddTool), before
// writing it atomically under the config's lock, keeping its mode. A refusal or failure leaves the file
// untouched.
func AddTool(path string, nt config.NewTool, o *config.Options) (int, error) {
	if err := config.CheckToolName(nt.Name); err != nil {
		return 0, err
	}
	if err := config.CheckBinary(nt.Binary); err != nil {
		return 0, err
	}
	var n int
	err := editConfig(path, func(data []byte) ([]byte, error) {
		out, rules, err := config.PlanAddTool(path, data, nt, o)
		n = rules
		return out, err
	}, nil)
	if err != nil {
		return 0, err
	}
	return n, nil
}
