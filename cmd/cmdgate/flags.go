package main

import (
	"flag"
	"io"
)

// groupHelp answers a command group (token, audit, cache) called without a subcommand
// (its usage on stderr, exitUsage) or with -h, -help, --help or help (on stdout,
// exitOK); usage writes it. done is false when args name a subcommand.
func (m *Main) groupHelp(args []string, usage func(io.Writer)) (code int, done bool) {
	switch {
	case len(args) == 0:
		usage(m.Stderr)
		return exitUsage, true
	case args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help":
		usage(m.Stdout)
		return exitOK, true
	}
	return 0, false
}

// parseFlags is parseInterspersed for a subcommand of m: an explicit -h, -help or
// --help prints the usage on stdout (it was asked for; exit status 0), while a usage
// error prints it on stderr.
func (m *Main) parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(m.Stdout)
			break
		}
	}
	return parseInterspersed(fs, args)
}

// parseInterspersed parses flags that may come before, between or after positional
// arguments (`cmdgate token revoke NAME --data DIR`), as GNU tools allow. A `--` ends
// flag parsing: everything after it is positional, as given.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
