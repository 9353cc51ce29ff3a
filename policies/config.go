package policies

import (
	"fmt"
	"strings"
)

// Actions a Decision can carry.
const (
	ActionAllow = "allow"
	ActionAsk   = "ask"
	ActionDeny  = "deny"
)

// Config is the policy configuration: the `policy:` section of the cmdgate config file
// (the allowlist configuration plus the answers for unknown and dynamic commands). It reaches the
// rules as data.cmdgate.config.
//
// The zero value is the default configuration: the default allowlist, and deny for
// unknown and dynamic commands.
type Config struct {
	AllowedCommands AllowedCommands `yaml:"allowed_commands" json:"allowed_commands"`
	// UnknownCommand is what a command outside the allowlist gets: "deny" (default) or
	// "ask".
	UnknownCommand string `yaml:"unknown_command" json:"unknown_command"`
	// DynamicCommand is what a command whose name or program is only known at run time
	// gets: "deny" (default) or "ask".
	DynamicCommand string `yaml:"dynamic_command" json:"dynamic_command"`
	// Profile is the rule profile: ProfileStrict (the default: the default lists
	// exactly) or ProfileSandboxed (running workspace code, local git operations and the
	// common language runners too, for a backend that isolates). The gateway resolves
	// its `policy.profile` setting (auto by default) from the backend and sets it here
	// and in every input's request.profile. It is not a key of the config file's
	// allowed_commands level: the `policy:` section's profile key chooses it.
	Profile string `yaml:"-" json:"profile"`
}

// Rule profiles (Config.Profile).
const (
	ProfileStrict    = "strict"
	ProfileSandboxed = "sandboxed"
)

// AllowedCommands configures the allowlist (the allowlist configuration). Entries are command names
// ("make") or commands with subcommand words ("git push").
type AllowedCommands struct {
	// UseDefault selects the default categories; nil means true.
	UseDefault *bool `yaml:"use_default" json:"use_default"`
	// Additional entries are added to the allowlist. They never override the forbidden
	// list: adding "sudo" does not allow sudo.
	Additional []string `yaml:"additional" json:"additional"`
	// Exclude removes entries; a single word also removes its multi-word entries
	// ("git" removes "git status").
	Exclude []string `yaml:"exclude" json:"exclude"`
	// CustomList is the whole allowlist when UseDefault is false (the shell builtins stay
	// allowed unless excluded). Setting it while UseDefault is true is an error.
	CustomList []string `yaml:"custom_list" json:"custom_list"`
}

// UsesDefault reports whether the default categories are used.
func (a AllowedCommands) UsesDefault() bool { return a.UseDefault == nil || *a.UseDefault }

// Effective returns c with every default filled in and nil lists made empty: the
// document the rules see as data.cmdgate.config.
func (c Config) Effective() Config {
	use := c.AllowedCommands.UsesDefault()
	out := Config{
		AllowedCommands: AllowedCommands{
			UseDefault: &use,
			Additional: normalizeList(c.AllowedCommands.Additional),
			Exclude:    normalizeList(c.AllowedCommands.Exclude),
			CustomList: normalizeList(c.AllowedCommands.CustomList),
		},
		UnknownCommand: c.UnknownCommand,
		DynamicCommand: c.DynamicCommand,
		Profile:        c.Profile,
	}
	if out.Profile == "" {
		out.Profile = ProfileStrict
	}
	if out.UnknownCommand == "" {
		out.UnknownCommand = ActionDeny
	}
	if out.DynamicCommand == "" {
		out.DynamicCommand = ActionDeny
	}
	return out
}

// Validate reports the first problem of c as a *ConfigError: an answer other than deny
// or ask, a malformed entry, or a custom_list while use_default is true.
func (c Config) Validate() error {
	for _, f := range []struct{ key, val string }{
		{"unknown_command", c.UnknownCommand},
		{"dynamic_command", c.DynamicCommand},
	} {
		if f.val != "" && f.val != ActionDeny && f.val != ActionAsk {
			return &ConfigError{Key: f.key, Message: fmt.Sprintf("%q is not deny or ask", f.val)}
		}
	}
	if c.Profile != "" && c.Profile != ProfileStrict && c.Profile != ProfileSandboxed {
		return &ConfigError{Key: "profile", Message: fmt.Sprintf("%q is not strict or sandboxed", c.Profile)}
	}
	a := c.AllowedCommands
	for _, l := range []struct {
		key     string
		entries []string
	}{
		{"allowed_commands.additional", a.Additional},
		{"allowed_commands.exclude", a.Exclude},
		{"allowed_commands.custom_list", a.CustomList},
	} {
		for i, e := range l.entries {
			if err := validEntry(e); err != nil {
				return &ConfigError{Key: fmt.Sprintf("%s[%d]", l.key, i), Message: err.Error()}
			}
		}
	}
	if a.UsesDefault() && len(a.CustomList) > 0 {
		return &ConfigError{Key: "allowed_commands.custom_list", Message: "custom_list is used only when use_default is false; set use_default: false or use additional"}
	}
	return nil
}

// validEntry checks one allowlist entry: words of printable characters separated by
// single spaces.
func validEntry(e string) error {
	if strings.TrimSpace(e) == "" {
		return fmt.Errorf("empty entry")
	}
	for _, r := range e {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("entry %q holds a control character", e)
		}
	}
	if strings.Contains(e, "/") {
		return fmt.Errorf("entry %q holds a /: entries are command names, and commands run by a path are never on the allowlist", e)
	}
	return nil
}

// normalizeList trims the entries and joins their words with single spaces.
func normalizeList(l []string) []string {
	out := make([]string, 0, len(l))
	for _, e := range l {
		out = append(out, strings.Join(strings.Fields(e), " "))
	}
	return out
}

// document is c as the JSON-like value stored at data.cmdgate.config.
func (c Config) document() map[string]any {
	e := c.Effective()
	list := func(l []string) []any {
		out := make([]any, len(l))
		for i, s := range l {
			out[i] = s
		}
		return out
	}
	return map[string]any{
		"allowed_commands": map[string]any{
			"use_default": *e.AllowedCommands.UseDefault,
			"additional":  list(e.AllowedCommands.Additional),
			"exclude":     list(e.AllowedCommands.Exclude),
			"custom_list": list(e.AllowedCommands.CustomList),
		},
		"unknown_command": e.UnknownCommand,
		"dynamic_command": e.DynamicCommand,
		"profile":         e.Profile,
	}
}
