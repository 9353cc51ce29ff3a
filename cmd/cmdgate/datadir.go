package main

import (
	"errors"
	"os"
	"path/filepath"
)

// dataDir resolves the data directory as contract 4 of docs/architecture.md orders it:
// --data, then CMDGATE_DATA, then $XDG_DATA_HOME/cmdgate, then ~/.local/share/cmdgate.
func (m *Main) dataDir(flagValue string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	if d := m.Getenv("CMDGATE_DATA"); d != "" {
		return filepath.Abs(d)
	}
	if x := m.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "cmdgate"), nil
	}
	home := m.Getenv("HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", errors.New("no data directory: set --data, CMDGATE_DATA or HOME")
		}
		home = h
	}
	return filepath.Join(home, ".local", "share", "cmdgate"), nil
}
