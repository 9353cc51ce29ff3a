package policies

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Decide returns them (wrapped) together with a deny decision.
var (
	// ErrUndefined: the policy produced no decision for the input.
	ErrUndefined = errors.New("policy decision is undefined")
	// ErrMalformed: the policy produced a decision that does not follow contract 2.
	ErrMalformed = errors.New("policy decision is malformed")
	// ErrNoBundle: the bundle has no policy file.
	ErrNoBundle = errors.New("policy bundle has no .rego file")
)

// ConfigError is an invalid policy configuration value.
type ConfigError struct {
	Key     string // the key under policy:, e.g. "allowed_commands.additional[2]"
	Message string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("policy.%s: %s", e.Key, e.Message)
}

// BundleError reports why a bundle could not be loaded: its parse and compile errors,
// each naming the file and line ("bundle/cmdgate/x.rego:12: rego_type_error: ...").
type BundleError struct {
	Source string   // the bundle: a directory, or "embedded"
	Errors []string // one line per error, file:line first
}

func (e *BundleError) Error() string {
	return fmt.Sprintf("policy bundle %s: %s", e.Source, strings.Join(e.Errors, "; "))
}
