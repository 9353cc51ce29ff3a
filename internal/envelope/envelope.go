// Package envelope holds the JSON envelope cmdgate's CLI prints a failed result in, for
// the programs that print one: cmdgate, and cmdgate-sandbox when it runs `cmdgate
// sandbox run` on cmdgate's behalf (package sandboxrun).
package envelope

import (
	"encoding/json"
	"fmt"
	"io"
)

// SchemaVersion is the version of the JSON envelope every subcommand prints (the
// agent-exec convention: `schema_version`, `ok`, `type`, and `error` when ok is false).
const SchemaVersion = 1

// Error is the error member of a failed result.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError prints a failed result of type typ on stdout, one line, and the message
// on stderr.
func WriteError(stdout, stderr io.Writer, typ, code, message string) {
	out := struct {
		SchemaVersion int    `json:"schema_version"`
		OK            bool   `json:"ok"`
		Type          string `json:"type"`
		Error         Error  `json:"error"`
	}{SchemaVersion, false, typ, Error{code, message}}
	b, _ := json.Marshal(out)
	stdout.Write(append(b, '\n'))
	fmt.Fprintf(stderr, "cmdgate %s: %s\n", typ, message)
}
