package parse

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// Limits applied when the corresponding Options field is zero or negative.
const (
	DefaultMaxBytes = 64 << 10
	DefaultMaxDepth = 16
)

// Bounds on the work done for one document, whatever the input: the words of all commands
// (after brace expansion and wrapper unwrapping) and the bytes of all re-parsed scripts.
const (
	maxWords       = 1 << 16
	maxNestedRatio = 4 // nested scripts may total maxNestedRatio × MaxBytes
)

// Options configure Script and Argv. The zero value is ready to use: no cwd (relative paths
// stay unresolved), no workspace (nothing is inside it), the default shell mode of the
// entry point, DefaultMaxBytes and DefaultMaxDepth.
type Options struct {
	// Cwd is the absolute directory the command runs in; relative operands and redirection
	// targets are resolved against it.
	Cwd string
	// Workspace is the absolute directory commands may work in; paths under it are
	// inside_workspace.
	Workspace string
	// ShellMode is copied to Request.ShellMode; "" means "default" for Script and "direct"
	// for Argv.
	ShellMode string
	// MaxBytes caps the script size (for Argv, the words joined with spaces) and the size
	// of each re-parsed nested script.
	MaxBytes int
	// MaxDepth caps nesting: compound commands, substitutions, wrappers and re-parsed
	// scripts each add a level.
	MaxDepth int
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = DefaultMaxDepth
	}
	return o
}

// Parsers are reused: Parse resets all parser state and the tree it returns shares nothing
// with the parser, so a parser can go back to the pool while its tree is still walked.
var parsers = sync.Pool{New: func() any {
	return syntax.NewParser(syntax.Variant(syntax.LangBash))
}}

func parseText(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	return f, err
}

// Script parses a bash script into the command document. It never returns nil and never
// panics: input that cannot be parsed safely (syntax error, NUL byte, invalid UTF-8, too
// large, nested too deep) gives a document whose Error is set and whose Commands is empty.
func Script(src string, opts Options) *Document {
	opts = opts.withDefaults()
	doc := newDocument("script", "default", opts)
	doc.Request.Raw = src
	if len(src) > opts.MaxBytes {
		line, col := offsetPos(src, opts.MaxBytes)
		return fail(doc, fmt.Sprintf("script is larger than %d bytes", opts.MaxBytes), line, col)
	}
	if i := strings.IndexByte(src, 0); i >= 0 {
		line, col := offsetPos(src, i)
		return fail(doc, "script contains a NUL byte", line, col)
	}
	if i := invalidUTF8(src); i >= 0 {
		line, col := offsetPos(src, i)
		return fail(doc, "script is not valid UTF-8", line, col)
	}
	f, err := parseText(src)
	if err != nil {
		msg, line, col := syntaxError(err, src)
		return fail(doc, msg, line, col)
	}
	w := newWalker(doc, opts, src)
	w.shell = &shellFuncs{tree: f, src: src}
	w.file(f, w.topScope())
	return w.finish()
}

// Argv builds the command document of a command given as words, run without a shell: one
// top-level command (words taken literally, no quote removal, no globbing), plus the inner
// commands its wrappers reveal (argv ["sh","-c","rm -rf /"] re-parses the -c script).
func Argv(argv []string, opts Options) *Document {
	opts = opts.withDefaults()
	doc := newDocument("argv", "direct", opts)
	doc.Request.Raw = quoteArgv(argv)
	if len(argv) == 0 {
		return fail(doc, "argv is empty", 1, 1)
	}
	size := 0
	for i, a := range argv {
		if i > 0 {
			size++
		}
		if j := strings.IndexByte(a, 0); j >= 0 {
			return fail(doc, fmt.Sprintf("argv[%d] contains a NUL byte", i), 1, size+j+1)
		}
		if j := invalidUTF8(a); j >= 0 {
			return fail(doc, fmt.Sprintf("argv[%d] is not valid UTF-8", i), 1, size+j+1)
		}
		size += len(a)
		if size > opts.MaxBytes {
			return fail(doc, fmt.Sprintf("argv is larger than %d bytes", opts.MaxBytes), 1, opts.MaxBytes+1)
		}
	}
	w := newWalker(doc, opts, "")
	at := Pos{Line: 1, Col: 1}
	w.at = &at
	fields := make([]field, len(argv))
	for i, a := range argv {
		fields[i] = field{val: a}
	}
	w.command(fields, map[string]string{}, false, nil, w.topScope(), at, false)
	return w.finish()
}

func newDocument(source, mode string, opts Options) *Document {
	doc := &Document{Commands: []Command{}, Assignments: []Assignment{}, Evaluations: []Evaluation{}}
	doc.Request.Source = source
	doc.Request.ShellMode = opts.ShellMode
	if doc.Request.ShellMode == "" {
		doc.Request.ShellMode = mode
	}
	doc.Request.Cwd = cleanDir(opts.Cwd)
	doc.Request.Workspace = cleanDir(opts.Workspace)
	return doc
}

func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	return path.Clean(d)
}

// fail turns doc into a refusal: no commands, no assignments, no evaluations, no
// features, and the error.
func fail(doc *Document, msg string, line, col int) *Document {
	doc.Commands = []Command{}
	doc.Assignments = []Assignment{}
	doc.Evaluations = []Evaluation{}
	doc.Features = Features{}
	doc.Error = &Error{Message: msg, Line: line, Col: col}
	return doc
}

// quoteArgv joins words with bash quoting. Words that cannot be quoted (NUL bytes, invalid
// UTF-8, which Argv refuses anyway) are kept as they are.
func quoteArgv(argv []string) string {
	var b strings.Builder
	for i, a := range argv {
		if i > 0 {
			b.WriteByte(' ')
		}
		q, err := syntax.Quote(a, syntax.LangBash)
		if err != nil {
			q = a
		}
		b.WriteString(q)
	}
	return b.String()
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8, or -1.
func invalidUTF8(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// offsetPos converts a byte offset of src into a 1-based line and byte column.
func offsetPos(src string, off int) (line, col int) {
	off = min(max(off, 0), len(src))
	line = 1 + strings.Count(src[:off], "\n")
	return line, off - strings.LastIndexByte(src[:off], '\n')
}

// syntaxError describes a parser error with its position in src.
func syntaxError(err error, src string) (msg string, line, col int) {
	var pe syntax.ParseError
	var le syntax.LangError
	var p syntax.Pos
	switch {
	case errors.As(err, &pe):
		msg, p = pe.Text, pe.Pos
	case errors.As(err, &le):
		msg, p = le.Error(), le.Pos
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	default:
		return err.Error(), 1, 1
	}
	line, col = int(p.Line()), int(p.Col())
	if line == 0 || col == 0 {
		line, col = offsetPos(src, int(p.Offset()))
	}
	return msg, line, col
}
