package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cmdgate/cmdgate/executor"
)

// Request is one command request, whichever front it came through: the body of POST
// /v1/exec and POST /v1/decide once decoded and validated (decodeExecRequest), and what
// other fronts build from their own input. Exactly one of Script and Argv is set.
type Request struct {
	Script    string   // a shell script ("command")
	Argv      []string // an argument vector, run without a shell
	Cwd       string   // relative to the workspace, or absolute inside it; "" is the workspace root
	ShellMode executor.ShellMode
	Stdin     string
	Timeout   time.Duration // within the executor's bounds
	MaxOutput int           // characters per stream, within the executor's bounds
	Task      string
	// Wait is how long Exec waits for the decision on an approval the request needs
	// (capped by ApprovalOptions.Wait); 0 answers APPROVAL_PENDING at once.
	Wait time.Duration
}

// requestFields are the members the body may have, and their JSON types.
var requestFields = map[string]string{
	"command":          "a string",
	"argv":             "an array of strings",
	"cwd":              "a string",
	"shell_mode":       "a string",
	"stdin":            "a string",
	"timeout_ms":       "an integer",
	"max_output_chars": "an integer",
	"task":             "a string",
	"wait_ms":          "an integer",
}

// maxTaskLen bounds the task name.
const maxTaskLen = 128

func invalid(format string, args ...any) *Error { return Invalid(format, args...) }

// DecodeRequest reads and validates the JSON form of a Request (the body of POST
// /v1/exec and POST /v1/decide) under this gateway's executor bounds: see
// decodeExecRequest.
func (s *Server) DecodeRequest(raw []byte) (*Request, error) {
	cfg := s.opts.Executor
	if s.tasks != nil {
		// A task's commands may run longer: decide checks the bound that applies.
		cfg.MaxTimeout = max(cfg.MaxTimeout, s.tasks.opts.Timeout)
	}
	return decodeExecRequest(raw, cfg)
}

// decodeExecRequest reads and validates an exec or decide body strictly: one JSON
// object and nothing after it, valid UTF-8 (checked on the raw bytes, because Go's
// decoder silently replaces invalid sequences), no unknown or repeated members, every
// member of its exact type (no null, no fractional or exponent numbers), no NUL
// character or unpaired surrogate escape in any string, command XOR argv, limits
// within the executor's bounds. Every error is INVALID_ARGUMENT naming the member.
func decodeExecRequest(raw []byte, cfg executor.Config) (*Request, error) {
	return decodeRequest(raw, cfg, requestFields, nil)
}

// decodeRequest is decodeExecRequest with other members: fields lists them all, and
// extra, when set, reads those it knows (handled true) before the common ones.
func decodeRequest(raw []byte, cfg executor.Config, fields map[string]string, extra func(m member) (bool, error)) (*Request, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("the request body is empty: send a JSON object such as {\"command\": \"ls\"}")
	}
	if !utf8.Valid(raw) {
		return nil, invalid("the request body is not valid UTF-8")
	}
	members, err := objectMembers(raw, fields)
	if err != nil {
		return nil, err
	}
	r := &Request{ShellMode: executor.ShellDefault, Task: DefaultTask}
	var hasCommand, hasArgv bool
	var timeoutMS, maxOutput *int64
	for _, m := range members {
		if extra != nil {
			handled, err := extra(m)
			if err != nil {
				return nil, err
			}
			if handled {
				continue
			}
		}
		switch m.name {
		case "command":
			if len(m.value) > 0 && m.value[0] == '[' {
				return nil, invalid("command must be a string holding a shell script; to send an argument vector use argv")
			}
			if r.Script, err = jsonString(m.name, m.value); err != nil {
				return nil, err
			}
			hasCommand = true
		case "argv":
			if r.Argv, err = jsonStrings(m.name, m.value); err != nil {
				return nil, err
			}
			hasArgv = true
		case "cwd":
			if r.Cwd, err = jsonString(m.name, m.value); err != nil {
				return nil, err
			}
			if r.Cwd == "" {
				return nil, invalid("cwd is empty: leave it out for the workspace root")
			}
		case "shell_mode":
			mode, err := jsonString(m.name, m.value)
			if err != nil {
				return nil, err
			}
			switch executor.ShellMode(mode) {
			case executor.ShellDefault, executor.ShellDirect:
				r.ShellMode = executor.ShellMode(mode)
			default:
				return nil, invalid("shell_mode must be %q or %q, got %q", executor.ShellDefault, executor.ShellDirect, mode)
			}
		case "stdin":
			if r.Stdin, err = jsonString(m.name, m.value); err != nil {
				return nil, err
			}
		case "timeout_ms":
			n, err := jsonInt(m.name, m.value)
			if err != nil {
				return nil, err
			}
			timeoutMS = &n
		case "max_output_chars":
			n, err := jsonInt(m.name, m.value)
			if err != nil {
				return nil, err
			}
			maxOutput = &n
		case "wait_ms":
			n, err := jsonInt(m.name, m.value)
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, invalid("wait_ms must not be negative")
			}
			r.Wait = time.Duration(min(n, int64(24*time.Hour/time.Millisecond))) * time.Millisecond
		case "task":
			if r.Task, err = jsonString(m.name, m.value); err != nil {
				return nil, err
			}
			if err := validTask(r.Task); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case hasCommand && hasArgv:
		return nil, invalid("send either command (a shell script) or argv (an argument vector), not both")
	case !hasCommand && !hasArgv:
		return nil, invalid("the request has no command: send command (a shell script) or argv (an argument vector)")
	case hasCommand && strings.TrimSpace(r.Script) == "":
		return nil, invalid("command is empty")
	case hasCommand && r.ShellMode == executor.ShellDirect:
		return nil, invalid("shell_mode direct needs argv: a script always runs through the shell")
	case hasArgv && len(r.Argv) == 0:
		return nil, invalid("argv is empty: it needs at least the command name")
	case hasArgv && r.Argv[0] == "":
		return nil, invalid("argv[0] is empty: it must name the command")
	}
	if r.Timeout, err = cfg.TimeoutMS(timeoutMS); err != nil {
		return nil, err
	}
	if r.MaxOutput, err = cfg.OutputChars(maxOutput); err != nil {
		return nil, err
	}
	// The rest (size, text) is checked by validate, which the core runs on every
	// request whichever front built it.
	return r, nil
}

// validate checks a request whichever front built it, and fills in the defaults of
// its zero values (ShellMode, Timeout, MaxOutput, Task): exactly one of Script and
// Argv, the shell mode, the size, the limits within the executor's bounds, the task
// name, and no NUL byte or invalid UTF-8 in any text (what the policy reads must be
// what runs). Errors are INVALID_ARGUMENT naming the field as the HTTP API does.
func (r *Request) validate(cfg executor.Config, maxScript int) error {
	if r.ShellMode == "" {
		r.ShellMode = executor.ShellDefault
	}
	if r.Task == "" {
		r.Task = DefaultTask
	}
	switch {
	case r.Script != "" && r.Argv != nil:
		return invalid("send either command (a shell script) or argv (an argument vector), not both")
	case r.Argv == nil && strings.TrimSpace(r.Script) == "":
		return invalid("the request has no command: send command (a shell script) or argv (an argument vector)")
	case r.Argv != nil && (len(r.Argv) == 0 || r.Argv[0] == ""):
		return invalid("argv[0] is empty: it must name the command")
	case r.ShellMode != executor.ShellDefault && r.ShellMode != executor.ShellDirect:
		return invalid("shell_mode must be %q or %q, got %q", executor.ShellDefault, executor.ShellDirect, r.ShellMode)
	case r.Argv == nil && r.ShellMode == executor.ShellDirect:
		return invalid("shell_mode direct needs argv: a script always runs through the shell")
	}
	size := len(r.Script)
	for i, a := range r.Argv {
		size += len(a)
		if i > 0 {
			size++
		}
	}
	if size > maxScript {
		return invalid("the command is %d bytes, more than the %d this gateway accepts", size, maxScript)
	}
	texts := [...]struct{ name, text string }{{"command", r.Script}, {"cwd", r.Cwd}, {"stdin", r.Stdin}}
	for _, t := range texts {
		if err := validText(t.name, t.text); err != nil {
			return err
		}
	}
	for _, a := range r.Argv {
		if err := validText("argv", a); err != nil {
			return err
		}
	}
	if r.Wait < 0 {
		return invalid("wait_ms must not be negative")
	}
	if r.Timeout == 0 {
		r.Timeout, _ = cfg.TimeoutMS(nil)
	}
	ms := r.Timeout.Milliseconds()
	if r.Timeout%time.Millisecond != 0 || ms < 1 {
		return invalid("the timeout must be a whole number of milliseconds, at least 1")
	}
	if _, err := cfg.TimeoutMS(&ms); err != nil {
		return AsError(err)
	}
	if r.MaxOutput == 0 {
		r.MaxOutput, _ = cfg.OutputChars(nil)
	}
	n := int64(r.MaxOutput)
	if _, err := cfg.OutputChars(&n); err != nil {
		return AsError(err)
	}
	return validTask(r.Task)
}

// validText refuses invalid UTF-8 and NUL characters.
func validText(name, text string) error {
	if !utf8.ValidString(text) {
		return invalid("%s is not valid UTF-8", name)
	}
	if strings.IndexByte(text, 0) >= 0 {
		return invalid("%s holds a NUL character", name)
	}
	return nil
}

// validTask checks a task name: 1 to 128 printable characters.
func validTask(task string) error {
	if task == "" || len(task) > maxTaskLen {
		return invalid("task must be 1 to %d bytes", maxTaskLen)
	}
	for _, c := range task {
		if c < 0x20 || c == 0x7f {
			return invalid("task holds a control character")
		}
	}
	return nil
}

type member struct {
	name  string
	value json.RawMessage
}

// objectMembers splits raw, which must be exactly one JSON object, into its members,
// refusing unknown and repeated names and anything after the object.
func objectMembers(raw []byte, fields map[string]string) ([]member, error) {
	if json.Valid(raw) {
		if members, ok := splitObject(bytes.Clone(raw)); ok {
			// At most one name past the known ones gets here: the first unknown or
			// repeated one ends the request.
			for i, m := range members {
				if _, known := fields[m.name]; !known {
					return nil, unknownField(m.name, fields)
				}
				for _, prev := range members[:i] {
					if prev.name == m.name {
						return nil, repeatedField(m.name)
					}
				}
			}
			return members, nil
		}
	}
	// Not JSON, or not an object: the decoder says what is wrong and where.
	return decodeMembers(raw, fields)
}

// decodeMembers is objectMembers read with json.Decoder, token by token.
func decodeMembers(raw []byte, fields map[string]string) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, invalid("the request body is not JSON: %s", jsonProblem(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, invalid("the request body must be a JSON object, not %s", jsonKind(tok))
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("the request body is not JSON: %s", jsonProblem(err))
		}
		name, _ := tok.(string)
		if _, known := fields[name]; !known {
			return nil, unknownField(name, fields)
		}
		if seen[name] {
			return nil, repeatedField(name)
		}
		seen[name] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid("field %s: the value is not JSON: %s", name, jsonProblem(err))
		}
		members = append(members, member{name, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, invalid("the request body is not JSON: %s", jsonProblem(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("the request body has data after the JSON object")
	}
	return members, nil
}

func unknownField(name string, fields map[string]string) error {
	return invalid("unknown field %q (known: %s)", Truncate(name, 64), strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
}

func repeatedField(name string) error { return invalid("field %q appears twice", name) }

// splitObject splits raw, a valid JSON text (json.Valid), into the members of the
// object it is, in order, each value a slice of raw as written (what json.Decoder
// gives a RawMessage) and each name decoded. ok is false when raw is another kind of
// value, or anything unexpected is met: the caller's decoder then reads it. This
// spares the decoder's per-token work on every request; the decoder stays for the
// errors, whose wording and byte offsets it gives.
func splitObject(raw []byte) (members []member, ok bool) {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	if i = skipJSONSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return nil, skipJSONSpace(raw, i+1) == len(raw)
	}
	members = make([]member, 0, 4)
	for i < len(raw) && raw[i] == '"' {
		end := jsonStringEnd(raw, i)
		if end < 0 {
			return nil, false
		}
		name, ok := memberName(raw[i:end])
		if !ok {
			return nil, false
		}
		if i = skipJSONSpace(raw, end); i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipJSONSpace(raw, i+1)
		end = jsonValueEnd(raw, i)
		if end < 0 {
			return nil, false
		}
		members = append(members, member{name, raw[i:end]})
		if i = skipJSONSpace(raw, end); i >= len(raw) {
			return nil, false
		}
		switch raw[i] {
		case '}':
			return members, skipJSONSpace(raw, i+1) == len(raw)
		case ',':
			i = skipJSONSpace(raw, i+1)
		default:
			return nil, false
		}
	}
	return nil, false
}

// memberName decodes a member name token as json.Decoder does.
func memberName(tok []byte) (string, bool) {
	if inner := tok[1 : len(tok)-1]; plainJSONString(inner) {
		return string(inner), true
	}
	var name string
	return name, json.Unmarshal(tok, &name) == nil
}

func skipJSONSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// jsonStringEnd is the index after the string token that starts at raw[i] ('"'), or
// -1 if it does not end.
func jsonStringEnd(raw []byte, i int) int {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// jsonValueEnd is the index after the value that starts at raw[i] in a valid JSON
// text, or -1.
func jsonValueEnd(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return jsonStringEnd(raw, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(raw); j++ {
			switch raw[j] {
			case '"':
				end := jsonStringEnd(raw, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i // a number, true, false or null
	for j < len(raw) && !strings.ContainsRune(" \t\n\r,}]", rune(raw[j])) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// jsonString decodes a JSON string member strictly.
func jsonString(field string, v json.RawMessage) (string, error) {
	if len(v) == 0 || v[0] != '"' {
		return "", invalid("field %s must be %s, got %s", field, fieldKind(field), rawKind(v))
	}
	return decodeString(field, v)
}

func decodeString(field string, v json.RawMessage) (string, error) {
	if n := len(v); n >= 2 && v[0] == '"' && v[n-1] == '"' && plainJSONString(v[1:n-1]) {
		return string(v[1 : n-1]), nil // what json.Unmarshal gives, without its work
	}
	if unpairedSurrogate(v) {
		return "", invalid("field %s holds an unpaired UTF-16 surrogate escape (not valid Unicode)", field)
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", invalid("field %s must be %s", field, fieldKind(field))
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", invalid("field %s contains a NUL character", field)
	}
	return s, nil
}

// jsonStrings decodes a JSON array of strings strictly (no null elements).
func jsonStrings(field string, v json.RawMessage) ([]string, error) {
	if len(v) == 0 || v[0] != '[' {
		return nil, invalid("field %s must be %s, got %s", field, fieldKind(field), rawKind(v))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(v, &elems); err != nil {
		return nil, invalid("field %s must be %s", field, fieldKind(field))
	}
	out := make([]string, len(elems))
	for i, e := range elems {
		name := fmt.Sprintf("%s[%d]", field, i)
		if len(e) == 0 || e[0] != '"' {
			return nil, invalid("field %s must be a string, got %s", name, rawKind(e))
		}
		s, err := decodeString(name, e)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// jsonInt decodes a JSON integer strictly: no fraction, no exponent, within int64.
func jsonInt(field string, v json.RawMessage) (int64, error) {
	s := string(v)
	if s == "" || strings.ContainsAny(s, ".eE") || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return 0, invalid("field %s must be %s, got %s", field, fieldKind(field), rawKind(v))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, invalid("field %s is out of range", field)
	}
	return n, nil
}

// plainJSONString reports whether s, the inside of a string token, is its own text: no
// escape, quote or control character, valid UTF-8 (so also no NUL).
func plainJSONString(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
	}
	return utf8.Valid(s)
}

// unpairedSurrogate reports whether the JSON string token v holds a \uD800-\uDFFF
// escape that is not part of a valid surrogate pair: Go's decoder would replace it with
// U+FFFD, so the text that runs would differ from the text sent.
func unpairedSurrogate(v []byte) bool {
	for i := 0; i+1 < len(v); i++ {
		if v[i] != '\\' {
			continue
		}
		if v[i+1] != 'u' {
			i++ // skip the escaped character (it may be a backslash)
			continue
		}
		r, ok := hex4(v, i+2)
		if !ok {
			return false // malformed: json.Unmarshal reports it
		}
		switch {
		case r >= 0xDC00 && r <= 0xDFFF:
			return true // a low surrogate without a high one before it
		case r >= 0xD800 && r <= 0xDBFF:
			if i+11 >= len(v) || v[i+6] != '\\' || v[i+7] != 'u' {
				return true
			}
			lo, ok := hex4(v, i+8)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 11
		default:
			i += 5
		}
	}
	return false
}

func hex4(v []byte, at int) (rune, bool) {
	if at+4 > len(v) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(v[at:at+4]), 16, 32)
	return rune(n), err == nil
}

// rawKind names the JSON type of a raw value for error messages.
func rawKind(v json.RawMessage) string {
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	if bytes.ContainsAny(v, ".eE") {
		return "a non-integer number"
	}
	return "a number"
}

func jsonKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "a " + string(t)
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "something else"
}

// jsonProblem describes a decoding error without echoing the body.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends too early"
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d", se.Offset)
	}
	return Truncate(err.Error(), 200)
}

// Truncate cuts s to at most n bytes on a character boundary, marking the cut with
// "…", for text a client sent that a message or a record quotes.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// verdictFields are the members of an approval decision's body.
var verdictFields = map[string]string{"comment": "a string", "scope": "a string", "expires_in": "a string",
	"max_uses": "an integer", "prefix": "a string or an array of strings"}

// DecodeVerdict reads the JSON body of an approval decision, {"comment", "scope",
// "expires_in", "max_uses", "prefix"} (all optional; an empty body is none), as strictly
// as DecodeRequest. prefix is an array of words, or a string split at white space.
func DecodeVerdict(raw []byte, approve bool) (Verdict, error) {
	v := Verdict{Approve: approve}
	if len(bytes.TrimSpace(raw)) == 0 {
		return v, nil
	}
	if !utf8.Valid(raw) {
		return v, invalid("the request body is not valid UTF-8")
	}
	members, err := objectMembers(raw, verdictFields)
	if err != nil {
		return v, err
	}
	for _, m := range members {
		switch m.name {
		case "comment":
			v.Comment, err = jsonString(m.name, m.value)
		case "scope":
			v.Scope, err = jsonString(m.name, m.value)
		case "expires_in":
			var text string
			if text, err = jsonString(m.name, m.value); err == nil {
				if v.Expiry, err = time.ParseDuration(text); err != nil || v.Expiry <= 0 {
					err = invalid("expires_in must be a duration such as 8h or 30m, got %q", Truncate(text, 64))
				}
			}
		case "max_uses":
			var n int64
			if n, err = jsonInt(m.name, m.value); err == nil {
				if n < 0 || n > 1<<31 {
					err = invalid("max_uses must be 0 (no bound) or more")
				}
				v.MaxUses = int(n)
			}
		case "prefix":
			if len(m.value) > 0 && m.value[0] == '"' {
				var text string
				if text, err = jsonString(m.name, m.value); err == nil {
					v.Prefix = strings.Fields(text)
				}
			} else {
				v.Prefix, err = jsonStrings(m.name, m.value)
			}
		}
		if err != nil {
			return v, err
		}
	}
	return v, nil
}

// fieldKind is the JSON type a member must have, for the error that says it is wrong:
// the exec body's members and the job request's.
func fieldKind(field string) string {
	if k, ok := requestFields[field]; ok {
		return k
	}
	if k, ok := jobRunFields[field]; ok {
		return k
	}
	return "of another type"
}
