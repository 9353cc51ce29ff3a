package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/cmdgate/cmdgate/policies"
)

// Config is the cmdgate configuration file: one YAML document (--config FILE, else
// $CMDGATE_CONFIG), one top-level section per part of cmdgate. Every key is optional;
// a missing key keeps its default. Keys that do not exist are errors: a typo in
// security configuration must not pass silently.
//
// Defaults (all of them, in one place):
//
//	policy:
//	  allowed_commands:
//	    use_default: true    # the categories of seed 001 6.3.1-6.3.6
//	    additional: []       # entries added ("tool" or "tool subcommand")
//	    exclude: []          # entries removed ("git" removes every "git ..." entry)
//	    custom_list: []      # the whole list when use_default is false
//	  unknown_command: deny  # deny or ask: a command outside the allowlist
//	  dynamic_command: deny  # deny or ask: a command only known at run time
//
// Sections for other parts of cmdgate are added to this struct as they come.
type Config struct {
	// Policy configures the policy (policies.Config, validated).
	Policy policies.Config `yaml:"policy"`
}

// configPath is the configuration file to read: the flag, else $CMDGATE_CONFIG, else
// none ("").
func (m *Main) configPath(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return m.Getenv("CMDGATE_CONFIG")
}

// loadConfig reads and validates the configuration file; "" gives the defaults.
func loadConfig(path string) (Config, error) {
	var cfg Config
	if path == "" {
		return cfg, nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return cfg, fmt.Errorf("read configuration %s: %w", path, err)
	}
	if err := decodeConfig(raw, &cfg); err != nil {
		return Config{}, fmt.Errorf("configuration %s: %w", path, err)
	}
	return cfg, nil
}

// decodeConfig decodes one YAML document strictly (unknown keys are errors) and
// validates it. An empty document is the defaults.
func decodeConfig(raw []byte, cfg *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return errors.New("more than one YAML document")
	}
	return cfg.Policy.Validate()
}
