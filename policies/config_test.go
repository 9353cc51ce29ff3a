package policies

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	no, yes := false, true
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantKey string // "" for valid
	}{
		{"zero value", Config{}, ""},
		{"ask", Config{UnknownCommand: "ask", DynamicCommand: "ask"}, ""},
		{"custom list", Config{AllowedCommands: AllowedCommands{UseDefault: &no, CustomList: []string{"npm", "git status"}}}, ""},
		{"unknown allow", Config{UnknownCommand: "allow"}, "unknown_command"},
		{"dynamic typo", Config{DynamicCommand: "Deny"}, "dynamic_command"},
		{"custom list with defaults", Config{AllowedCommands: AllowedCommands{UseDefault: &yes, CustomList: []string{"npm"}}}, "allowed_commands.custom_list"},
		{"custom list with implicit defaults", Config{AllowedCommands: AllowedCommands{CustomList: []string{"npm"}}}, "allowed_commands.custom_list"},
		{"empty entry", Config{AllowedCommands: AllowedCommands{Additional: []string{"  "}}}, "allowed_commands.additional[0]"},
		{"path entry", Config{AllowedCommands: AllowedCommands{Additional: []string{"ok", "./tool"}}}, "allowed_commands.additional[1]"},
		{"sandboxed profile", Config{Profile: ProfileSandboxed}, ""},
		{"unknown profile", Config{Profile: "lax"}, "profile"},
		{"control character", Config{AllowedCommands: AllowedCommands{Exclude: []string{"a\nb"}}}, "allowed_commands.exclude[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cfg.Validate()
			if tc.wantKey == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey {
				t.Errorf("Validate() = %v, want a ConfigError on %s", err, tc.wantKey)
			}
		})
	}
}

func TestConfigEffective(t *testing.T) {
	t.Parallel()
	yes := true
	got := Config{AllowedCommands: AllowedCommands{Additional: []string{"  git   push "}}}.Effective()
	want := Config{
		AllowedCommands: AllowedCommands{UseDefault: &yes, Additional: []string{"git push"}, Exclude: []string{}, CustomList: []string{}},
		UnknownCommand:  "deny",
		DynamicCommand:  "deny",
		Profile:         ProfileStrict,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Effective() (-want +got):\n%s", diff)
	}
}
