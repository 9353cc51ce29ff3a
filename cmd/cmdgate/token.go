package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cmdgate/cmdgate/gateway"
)

const tokenUsage = `usage: cmdgate token create --role ROLE --name NAME [--data DIR]
       cmdgate token list [--data DIR]
       cmdgate token revoke NAME|ID [--data DIR]

API tokens live hashed in the data directory (--data, $CMDGATE_DATA,
$XDG_DATA_HOME/cmdgate, ~/.local/share/cmdgate); a running gateway sees a change at
once.

  create   make a token with a role (agent, approver, auditor or admin) and a unique
           name; the secret is printed once, here, and never stored
  list     every token with its role and dates (no secrets)
  revoke   revoke a token by name or id: requests with it are refused from then on
`

// runToken implements `cmdgate token create|list|revoke`: tokens live hashed in the
// data directory; the secret is printed once, by create.
func (m *Main) runToken(_ context.Context, args []string) int {
	if code, done := m.groupHelp(args, func(w io.Writer) { fmt.Fprint(w, tokenUsage) }); done {
		return code
	}
	sub, args := args[0], args[1:]
	if sub != "create" && sub != "list" && sub != "revoke" {
		fmt.Fprintf(m.Stderr, "cmdgate token: unknown subcommand %q (create, list, revoke)\n", sub)
		fmt.Fprint(m.Stderr, tokenUsage)
		return exitUsage
	}
	// CLI answers are typed noun.verb: token.create, token.list, token.revoke.
	typ := "token." + sub
	fs := flag.NewFlagSet("token "+sub, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), tokenUsage)
		fmt.Fprintf(fs.Output(), "\nflags of token %s:\n", sub)
		fs.PrintDefaults()
	}
	data := fs.String("data", "", "data directory (default: $CMDGATE_DATA, $XDG_DATA_HOME/cmdgate, ~/.local/share/cmdgate)")
	var role, name *string
	if sub == "create" {
		role = fs.String("role", "", "role of the token: agent, approver, auditor or admin")
		name = fs.String("name", "", "name of the token (letters, digits, - _ . @)")
	}
	operands, err := m.parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	dir, err := m.dataDir(*data)
	if err != nil {
		return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
	}

	switch sub {
	case "create":
		if len(operands) != 0 || *role == "" || *name == "" {
			fmt.Fprintln(m.Stderr, "usage: cmdgate token create --role agent|approver|auditor|admin --name NAME [--data DIR]")
			return exitUsage
		}
		r, err := gateway.ParseRole(*role)
		if err != nil {
			return m.writeError(typ, "INVALID_ARGUMENT", err.Error())
		}
		store, err := gateway.OpenTokens(dir)
		if err != nil {
			return m.writeError(typ, "INTERNAL", err.Error())
		}
		secret, tok, err := store.Create(*name, r)
		if err != nil {
			code := "INTERNAL"
			switch {
			case errors.Is(err, gateway.ErrTokenExists):
				code = "ALREADY_EXISTS"
			case errors.Is(err, gateway.ErrTokenName):
				code = "INVALID_ARGUMENT"
			}
			return m.writeError(typ, code, err.Error())
		}
		return m.writeResult(typ, struct {
			Name  string       `json:"name"`
			Role  gateway.Role `json:"role"`
			Token string       `json:"token"`
			ID    string       `json:"id"`
		}{tok.Name, tok.Role, secret, tok.ID})

	case "list":
		if len(operands) != 0 {
			fmt.Fprintln(m.Stderr, "usage: cmdgate token list [--data DIR]")
			return exitUsage
		}
		store, err := gateway.OpenTokens(dir)
		if err != nil {
			return m.writeError(typ, "INTERNAL", err.Error())
		}
		tokens, err := store.List()
		if err != nil {
			return m.writeError(typ, "INTERNAL", err.Error())
		}
		type entry struct {
			ID        string       `json:"id"`
			Name      string       `json:"name"`
			Role      gateway.Role `json:"role"`
			CreatedAt time.Time    `json:"created_at"`
			RevokedAt *time.Time   `json:"revoked_at,omitempty"`
		}
		out := make([]entry, 0, len(tokens))
		for _, t := range tokens {
			out = append(out, entry{t.ID, t.Name, t.Role, t.CreatedAt, t.RevokedAt})
		}
		return m.writeResult(typ, struct {
			Tokens []entry `json:"tokens"`
		}{out})

	case "revoke":
		if len(operands) != 1 {
			fmt.Fprintln(m.Stderr, "usage: cmdgate token revoke NAME|ID [--data DIR]")
			return exitUsage
		}
		store, err := gateway.OpenTokens(dir)
		if err != nil {
			return m.writeError(typ, "INTERNAL", err.Error())
		}
		tok, err := store.Revoke(operands[0])
		if err != nil {
			code := "INTERNAL"
			if errors.Is(err, gateway.ErrTokenNotFound) {
				code = "NOT_FOUND"
			}
			return m.writeError(typ, code, err.Error())
		}
		return m.writeResult(typ, struct {
			ID        string       `json:"id"`
			Name      string       `json:"name"`
			Role      gateway.Role `json:"role"`
			RevokedAt *time.Time   `json:"revoked_at"`
		}{tok.ID, tok.Name, tok.Role, tok.RevokedAt})
	}
	fmt.Fprintf(m.Stderr, "cmdgate token: unknown subcommand %q (create, list, revoke)\n", sub)
	return exitUsage
}
