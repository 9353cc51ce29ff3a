package main

import "flag"

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
