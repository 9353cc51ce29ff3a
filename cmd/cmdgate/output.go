package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/cmdgate/cmdgate/internal/envelope"
)

// schemaVersion is the version of the JSON envelope every subcommand prints.
const schemaVersion = envelope.SchemaVersion

// writeResult prints payload, a value that marshals to a JSON object, as one line on
// stdout inside the envelope {"schema_version","ok":true,"type",...payload fields}.
func (m *Main) writeResult(typ string, payload any) int {
	if !m.writeEnvelope(typ, nil, payload) {
		return m.writeError(typ, "INTERNAL", fmt.Sprintf("encode %s result", typ))
	}
	return exitOK
}

// writeEnvelope prints {"schema_version","ok","type"[,"error"],...payload fields} as one
// line on stdout: ok is false when e is set. It reports false, printing nothing, when
// payload does not marshal to a JSON object.
func (m *Main) writeEnvelope(typ string, e *cliError, payload any) bool {
	body, err := json.Marshal(payload)
	if err != nil || len(body) < 2 || body[0] != '{' {
		return false
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"schema_version":%d,"ok":%t,"type":%q`, schemaVersion, e == nil, typ)
	if e != nil {
		eb, _ := json.Marshal(e)
		b.WriteString(`,"error":`)
		b.Write(eb)
	}
	if len(body) > 2 {
		b.WriteByte(',')
		b.Write(body[1:])
	} else {
		b.WriteByte('}')
	}
	b.WriteByte('\n')
	m.Stdout.Write(b.Bytes())
	return true
}

// writeFailed prints a failed result that also carries a payload (a test report
// whose tests failed): the envelope with ok false and the error, then the payload's
// fields; the message goes to stderr too. It returns exitError.
func (m *Main) writeFailed(typ, code, message string, payload any) int {
	if !m.writeEnvelope(typ, &cliError{Code: code, Message: message}, payload) {
		return m.writeError(typ, code, message)
	}
	fmt.Fprintf(m.Stderr, "cmdgate %s: %s\n", typ, message)
	return exitError
}

// cliError is the error member of a failed result.
type cliError = envelope.Error

// writeError prints a failed result on stdout and the message on stderr, and returns
// exitError.
func (m *Main) writeError(typ, code, message string) int {
	envelope.WriteError(m.Stdout, m.Stderr, typ, code, message)
	return exitError
}
