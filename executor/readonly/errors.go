package readonly

import (
	"errors"
	"fmt"
)

// The error codes. Each *Error carries one of them; its Message starts with it.
const (
	CodeParse         = "parse_error"           // bad quoting, an empty stage, invalid UTF-8
	CodeEmpty         = "empty"                 // no command at all
	CodeForbidden     = "forbidden"             // a forbidden character or command name
	CodeTooManyStages = "too_many_stages"       // more than MaxStages stages
	CodeTooManyArgs   = "too_many_args"         // a stage with more than MaxArgs argv entries
	CodeRequires      = "mvp_requires"          // the pipeline does not start by reading a file
	CodeUnsupported   = "mvp_unsupported_stage" // a known command with options or operands outside the language
	CodeInvalidPath   = "invalid_path"          // an unusable path, or not a regular file
	CodeNotAllowed    = "file_not_allowed"      // the file is not on the allowlist
	CodeTooLarge      = "file_too_large"        // the file is larger than MaxFileSize
	CodeIO            = "io_error"              // reading failed, or the run was cancelled
	// CodeOutputTooLarge: the pipeline makes more than MaxOutput bytes (nl stacked on a
	// file of empty lines); cmdgate's extension, exit 1 as seed 004's other failures.
	CodeOutputTooLarge = "output_too_large"
)

// MaxOutput bounds what one evaluation makes: its output and the lines its filters
// create (16 MiB; a 1 MiB file through the language's own stages rarely makes a tenth).
const MaxOutput = 16 << 20

// errOutputTooLarge stops an evaluation that made more than MaxOutput bytes.
var errOutputTooLarge = errors.New("output too large")

// Error is the typed error of Parse, Allowlist.Open and Run. Message is written for the
// caller (the agent) and starts with Code and a colon, so that Message alone says
// everything; it never names the real path of a file that is not allowed.
//
// The zero value has an empty Code and exits 1.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// ExitCode is the exit status a shell-like caller reports for the error: 2 for a
// command outside the language or an unusable path, 3 for a file that is not allowed,
// 4 for a file that is too large and 1 for I/O failures (and unknown codes).
func (e *Error) ExitCode() int {
	switch e.Code {
	case CodeParse, CodeEmpty, CodeForbidden, CodeTooManyStages, CodeTooManyArgs,
		CodeRequires, CodeUnsupported, CodeInvalidPath:
		return 2
	case CodeNotAllowed:
		return 3
	case CodeTooLarge:
		return 4
	}
	return 1
}

// errorf returns an *Error of code whose Message is "code: " and the formatted text.
func errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: code + ": " + fmt.Sprintf(format, args...)}
}

// requiresMessage is the exact text of every CodeRequires error (seed document
// "execute").
const requiresMessage = CodeRequires + ": cat <FILE> (or head/tail/nl/sed ... <FILE>)"
