package policies

import (
	"sort"
	"strings"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/cmdgate/cmdgate/parse"
)

// InputValue converts a command document to the Rego input value, field for field the
// value its JSON encoding would give, without the JSON round trip (the engine's hot
// path), plus two derived fields: "contained" on each command (see Contained) and
// "words" on the document (see Words).
// TestInputValueMatchesJSON holds the two equal.
//
// Object keys are shared, prebuilt terms, and so are the values of contexts, positions
// and features, which repeat; the terms of one document's strings are allocated
// together. Terms are never modified by evaluation, so sharing is safe.
func InputValue(doc *parse.Document) ast.Value { return inputValue(doc, nil) }

// inputValue is InputValue, with "routed" when rt is not nil (the engine's input).
func inputValue(doc *parse.Document, rt *routes) ast.Value {
	if doc == nil {
		return ast.NewObject()
	}
	b := &builder{terms: make([]ast.Term, termEstimate(doc))}
	items := [][2]*ast.Term{
		b.item(kPrincipal, ast.NewObject(
			b.str(kName, doc.Principal.Name),
			b.str(kRole, doc.Principal.Role),
		)),
		b.item(kRequest, b.request(doc.Request)),
		b.item(kCommands, b.commands(doc.Commands)),
		b.item(kAssignments, b.assignments(doc.Assignments)),
		b.item(kEvaluations, b.evaluations(doc.Evaluations)),
		b.item(kFeatures, features(doc.Features)),
		b.item(kError, b.errorValue(doc.Error)),
		b.item(kSandbox, sandboxValue(doc.Sandbox)),
		b.str(kWords, Words(doc)),
	}
	if rt != nil {
		items = append(items, b.item(kRouted, rt.value(doc)))
	}
	if r := doc.Readonly; r != nil {
		// Only in a read-only language request, as in its JSON (omitempty).
		items = append(items, b.item(kReadonly, ast.NewObject(
			b.str(kCommand, r.Command), b.str(kFile, r.File), b.str(kPath, r.Path))))
	}
	return ast.NewObject(items...)
}

// Keys of the input document.
var (
	kPrincipal, kName, kRole, kRequest, kCommands, kAssignments, kFeatures, kError = key("principal"), key("name"), key("role"), key("request"), key("commands"), key("assignments"), key("features"), key("error")

	kID, kSource, kShellMode, kProfile, kRaw, kCwd, kWorkspace, kTask = key("id"), key("source"), key("shell_mode"), key("profile"), key("raw"), key("cwd"), key("workspace"), key("task")

	kIndex, kPath, kArgv, kFlags, kOperands, kRedirects, kEnv, kDynamic, kDynamicName, kGlob, kVia, kContext, kPos = key("index"), key("path"), key("argv"), key("flags"), key("operands"), key("redirects"), key("env"), key("dynamic"), key("dynamic_name"), key("glob"), key("via"), key("context"), key("pos")

	kText, kInsideWorkspace, kArgi, kContained, kFunctionCall = key("text"), key("inside_workspace"), key("argi"), key("contained"), key("function_call")

	kOp, kFd, kTarget, kWrite, kBody = key("op"), key("fd"), key("target"), key("write"), key("body")

	kPipeline, kSubshell, kSubstitution, kBackground, kCondition, kFunction, kPipelineID, kStage = key("pipeline"), key("subshell"), key("substitution"), key("background"), key("condition"), key("function"), key("pipeline_id"), key("stage")

	kLine, kCol, kValue, kAppend, kMessage = key("line"), key("col"), key("value"), key("append"), key("message")

	kSandbox, kBackend, kIsolated, kPrivateTmp, kHome = key("sandbox"), key("backend"), key("isolated"), key("private_tmp"), key("home")

	kReadonly, kCommand, kFile, kWords = key("readonly"), key("command"), key("file"), key("words")

	kOptions, kEvaluations, kKind, kNames, kValues = key("options"), key("evaluations"), key("kind"), key("names"), key("values")

	kCommandSubstitution, kProcessSubstitution, kHeredoc, kFunctionDefinition, kEval, kNestedShell = key("command_substitution"), key("process_substitution"), key("heredoc"), key("function_definition"), key("eval"), key("nested_shell")

	emptyArray = ast.NewTerm(ast.NewArray())
)

func key(s string) *ast.Term { return ast.StringTerm(s) }

// builder allocates the string terms of one document in chunks.
type builder struct {
	terms []ast.Term
}

// termEstimate is about the number of terms InputValue allocates for doc (more is
// allocated in chunks if needed), so that one allocation holds them all.
func termEstimate(doc *parse.Document) int {
	n := 16
	for i := range doc.Commands {
		c := &doc.Commands[i]
		n += 12 + len(c.Argv) + len(c.Flags) + len(c.Via) + 3*len(c.Operands) + 5*len(c.Redirects) + 2*len(c.Env) + 3*len(c.Options)
	}
	for i := range doc.Evaluations {
		e := &doc.Evaluations[i]
		n += 8 + len(e.Names) + len(e.Values) + len(e.Via)
	}
	for i := range doc.Assignments {
		n += 6 + len(doc.Assignments[i].Via)
	}
	return n
}

func (b *builder) term(v ast.Value) *ast.Term {
	if len(b.terms) == 0 {
		b.terms = make([]ast.Term, 32)
	}
	t := &b.terms[0]
	b.terms = b.terms[1:]
	t.Value = v
	return t
}

func (b *builder) string(s string) *ast.Term {
	if s == "" || ast.HasInternedValue(s) {
		return ast.InternedTerm(s)
	}
	return b.term(ast.String(s))
}

func (b *builder) item(k *ast.Term, v ast.Value) [2]*ast.Term { return [2]*ast.Term{k, b.term(v)} }

func (b *builder) str(k *ast.Term, v string) [2]*ast.Term { return [2]*ast.Term{k, b.string(v)} }

func boolean(k *ast.Term, v bool) [2]*ast.Term { return [2]*ast.Term{k, ast.InternedTerm(v)} }

func number(k *ast.Term, v int) [2]*ast.Term { return [2]*ast.Term{k, ast.InternedTerm(v)} }

func (b *builder) request(r parse.Request) ast.Value {
	return ast.NewObject(
		b.str(kID, r.ID),
		b.str(kSource, r.Source),
		b.str(kShellMode, r.ShellMode),
		b.str(kProfile, r.Profile),
		b.str(kRaw, r.Raw),
		b.str(kCwd, r.Cwd),
		b.str(kWorkspace, r.Workspace),
		b.str(kTask, r.Task),
	)
}

func (b *builder) commands(cmds []parse.Command) ast.Value {
	if cmds == nil {
		return ast.InternedNullValue
	}
	terms := make([]*ast.Term, len(cmds))
	for i := range cmds {
		terms[i] = b.term(b.command(&cmds[i]))
	}
	return ast.NewArray(terms...)
}

func (b *builder) command(c *parse.Command) ast.Value {
	return ast.NewObject(
		number(kIndex, c.Index),
		b.str(kName, c.Name),
		b.str(kPath, c.Path),
		b.item(kArgv, b.strings(c.Argv)),
		b.item(kFlags, b.strings(c.Flags)),
		b.item(kOptions, b.options(c.Options)),
		b.item(kOperands, b.operands(c.Operands)),
		b.item(kRedirects, b.redirects(c.Redirects)),
		b.item(kEnv, b.env(c.Env)),
		boolean(kDynamic, c.Dynamic),
		boolean(kDynamicName, c.DynamicName),
		boolean(kGlob, c.Glob),
		b.item(kVia, b.strings(c.Via)),
		b.item(kContext, contextValue(c.Context)),
		b.item(kPos, posValue(c.Pos)),
		b.str(kCwd, c.Cwd),
		boolean(kFunctionCall, c.FunctionCall),
		boolean(kContained, Contained(c)),
	)
}

// Words is every argv word and redirect target of the document's commands, in order,
// each followed by a newline. The engine adds it to the input as "words": a rule that
// looks for text anywhere in the script's words (the Unix socket rule's hints) tests
// one string instead of walking every word of every command, which costs an
// evaluation per word.
func Words(doc *parse.Document) string {
	n := 0
	for i := range doc.Commands {
		c := &doc.Commands[i]
		for _, w := range c.Argv {
			n += len(w) + 1
		}
		for j := range c.Redirects {
			n += len(c.Redirects[j].Target) + 1
		}
	}
	var sb strings.Builder
	sb.Grow(n)
	for i := range doc.Commands {
		c := &doc.Commands[i]
		for _, w := range c.Argv {
			sb.WriteString(w)
			sb.WriteByte('\n')
		}
		for j := range c.Redirects {
			sb.WriteString(c.Redirects[j].Target)
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}

// Contained reports whether a command names nothing outside the workspace: no
// environment assignments, no run-time words (Dynamic, DynamicName), no option whose
// value looks like a path outside it (--file=/x, -f~/x), every operand a static path
// inside the workspace and outside .git, and every redirection such a path, a
// descriptor duplication (2>&1) or a here-document/here-string. The engine
// adds it to each command of the input as "contained": the policy's path and
// environment rules skip contained commands of allowed tools (they could not find
// anything there), so an everyday script costs one test per command. A document
// without the field (raw JSON input) has every command checked.
func Contained(c *parse.Command) bool {
	if c.Dynamic || c.DynamicName || len(c.Env) > 0 {
		return false
	}
	for i, w := range c.Argv {
		if w == "--" {
			break
		}
		if i > 0 && strings.HasPrefix(w, "-") && optionPath(w) {
			return false
		}
	}
	for i := range c.Operands {
		o := &c.Operands[i]
		if o.Dynamic || !o.InsideWorkspace || o.Path == "" || gitPath(o.Path) {
			return false
		}
	}
	for i := range c.Redirects {
		r := &c.Redirects[i]
		switch {
		case r.Dynamic:
			return false
		case r.Path == "":
			if !nameless(r) {
				return false
			}
		case !r.InsideWorkspace || gitPath(r.Path):
			return false
		}
	}
	return true
}

// optionPath reports an option word whose value may be a path outside the workspace:
// --opt=/x, -opt=/x (Go flags), --opt=~/x, --opt=../x, --opt=a/../../x, -f/x (the rules
// check those values).
func optionPath(w string) bool {
	if _, v, ok := strings.Cut(w, "="); ok && outsidePath(v) {
		return true
	}
	return !strings.HasPrefix(w, "--") && len(w) > 2 && outsidePath(w[2:])
}

// outsidePath reports text that may name a path outside the workspace when resolved.
func outsidePath(v string) bool {
	return strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~") || strings.HasPrefix(v, "..") ||
		strings.Contains(v, "$") || strings.Contains(v, "/../") || strings.HasSuffix(v, "/..")
}

// nameless reports a redirection that names no file: a descriptor duplication or a
// here-document or here-string.
func nameless(r *parse.Redirect) bool {
	switch r.Op {
	case "<<", "<<-", "<<<":
		return true
	case ">&", "<&":
		return !r.Write
	}
	return false
}

// gitPath reports a path inside (or naming) a .git directory.
func gitPath(p string) bool {
	return strings.HasSuffix(p, "/.git") || strings.Contains(p, "/.git/")
}

// array converts a list of the document: null when it is absent (nil), [] when empty,
// else each element's term.
func array[T any](xs []T, term func(T) *ast.Term) ast.Value {
	if xs == nil {
		return ast.InternedNullValue
	}
	if len(xs) == 0 {
		return emptyArray.Value
	}
	terms := make([]*ast.Term, len(xs))
	for i, x := range xs {
		terms[i] = term(x)
	}
	return ast.NewArray(terms...)
}

func (b *builder) strings(ss []string) ast.Value { return array(ss, b.string) }

func (b *builder) operands(ops []parse.Operand) ast.Value {
	return array(ops, func(o parse.Operand) *ast.Term {
		return b.term(ast.NewObject(
			b.str(kText, o.Text),
			b.str(kPath, o.Path),
			boolean(kInsideWorkspace, o.InsideWorkspace),
			boolean(kDynamic, o.Dynamic),
			boolean(kGlob, o.Glob),
			number(kArgi, o.Argi),
		))
	})
}

func (b *builder) options(os []parse.Option) ast.Value {
	return array(os, func(o parse.Option) *ast.Term {
		if o.Value == "" && o.Argi <= 15 && len(o.Name) == 2 {
			// Value-less short options (-l, -r) repeat across commands and requests; the
			// bounds keep the cache small.
			return b.term(cached(&optionCache, o, flagValue))
		}
		return b.term(b.option(o))
	})
}

// flagValue is the value of a value-less option, built apart from any document.
func flagValue(o parse.Option) ast.Value {
	return ast.NewObject(
		[2]*ast.Term{kName, ast.StringTerm(o.Name)},
		[2]*ast.Term{kValue, ast.InternedTerm("")},
		number(kArgi, o.Argi),
		boolean(kDynamic, o.Dynamic),
	)
}

func (b *builder) option(o parse.Option) ast.Value {
	return ast.NewObject(
		b.str(kName, o.Name),
		b.str(kValue, o.Value),
		number(kArgi, o.Argi),
		boolean(kDynamic, o.Dynamic),
	)
}

func (b *builder) evaluations(es []parse.Evaluation) ast.Value {
	return array(es, func(e parse.Evaluation) *ast.Term {
		return b.term(ast.NewObject(
			b.str(kKind, e.Kind),
			b.str(kText, e.Text),
			b.item(kNames, b.strings(e.Names)),
			b.item(kValues, b.strings(e.Values)),
			boolean(kDynamic, e.Dynamic),
			number(kCommand, e.Command),
			b.item(kVia, b.strings(e.Via)),
			b.item(kContext, contextValue(e.Context)),
			b.item(kPos, posValue(e.Pos)),
		))
	})
}

func (b *builder) redirects(rs []parse.Redirect) ast.Value {
	return array(rs, func(r parse.Redirect) *ast.Term {
		return b.term(ast.NewObject(
			b.str(kOp, r.Op),
			number(kFd, r.Fd),
			b.str(kTarget, r.Target),
			b.str(kPath, r.Path),
			boolean(kInsideWorkspace, r.InsideWorkspace),
			boolean(kWrite, r.Write),
			boolean(kDynamic, r.Dynamic),
			b.str(kBody, r.Body),
		))
	})
}

func (b *builder) env(env map[string]string) ast.Value {
	if env == nil {
		return ast.InternedNullValue
	}
	if len(env) == 0 {
		return ast.InternedEmptyObject.Value
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([][2]*ast.Term, len(keys))
	for i, k := range keys {
		items[i] = [2]*ast.Term{b.string(k), b.string(env[k])}
	}
	return ast.NewObject(items...)
}

// Values that repeat across commands and requests (contexts, positions, features) are
// built once and shared, within bounds that keep the caches small.
var (
	optionCache   sync.Map // parse.Option (value-less, short) -> ast.Value
	contextCache  sync.Map // parse.Context -> ast.Value
	posCache      sync.Map // parse.Pos -> ast.Value
	featuresCache sync.Map // parse.Features -> ast.Value
)

func cached[K comparable](m *sync.Map, k K, build func(K) ast.Value) ast.Value {
	if v, ok := m.Load(k); ok {
		return v.(ast.Value)
	}
	v, _ := m.LoadOrStore(k, build(k))
	return v.(ast.Value)
}

func contextValue(c parse.Context) ast.Value {
	if c.PipelineID < -1 || c.PipelineID > 15 || c.Stage < 0 || c.Stage > 15 {
		return buildContext(c)
	}
	return cached(&contextCache, c, buildContext)
}

func buildContext(c parse.Context) ast.Value {
	return ast.NewObject(
		boolean(kPipeline, c.Pipeline),
		boolean(kSubshell, c.Subshell),
		boolean(kSubstitution, c.Substitution),
		boolean(kBackground, c.Background),
		boolean(kCondition, c.Condition),
		boolean(kFunction, c.Function),
		number(kPipelineID, c.PipelineID),
		number(kStage, c.Stage),
	)
}

func posValue(p parse.Pos) ast.Value {
	if p.Line < 0 || p.Line > 255 || p.Col < 0 || p.Col > 255 {
		return buildPos(p)
	}
	return cached(&posCache, p, buildPos)
}

func buildPos(p parse.Pos) ast.Value {
	return ast.NewObject(number(kLine, p.Line), number(kCol, p.Col))
}

func (b *builder) assignments(as []parse.Assignment) ast.Value {
	return array(as, func(a parse.Assignment) *ast.Term {
		return b.term(ast.NewObject(
			b.str(kName, a.Name),
			b.str(kValue, a.Value),
			boolean(kDynamic, a.Dynamic),
			boolean(kAppend, a.Append),
			b.item(kVia, b.strings(a.Via)),
			b.item(kContext, contextValue(a.Context)),
			b.item(kPos, posValue(a.Pos)),
		))
	})
}

func features(f parse.Features) ast.Value {
	return cached(&featuresCache, f, buildFeatures)
}

// sandboxCache holds the sandbox values: a gateway has one.
var sandboxCache sync.Map

func sandboxValue(sb parse.Sandbox) ast.Value {
	return cached(&sandboxCache, sb, func(sb parse.Sandbox) ast.Value {
		return ast.NewObject(
			[2]*ast.Term{kBackend, ast.StringTerm(sb.Backend)},
			boolean(kIsolated, sb.Isolated),
			boolean(kPrivateTmp, sb.PrivateTmp),
			[2]*ast.Term{kHome, ast.StringTerm(sb.Home)},
		)
	})
}

func buildFeatures(f parse.Features) ast.Value {
	return ast.NewObject(
		boolean(kCommandSubstitution, f.CommandSubstitution),
		boolean(kProcessSubstitution, f.ProcessSubstitution),
		boolean(kBackground, f.Background),
		boolean(kHeredoc, f.Heredoc),
		boolean(kFunctionDefinition, f.FunctionDefinition),
		boolean(kEval, f.Eval),
		boolean(kNestedShell, f.NestedShell),
	)
}

func (b *builder) errorValue(e *parse.Error) ast.Value {
	if e == nil {
		return ast.InternedNullValue
	}
	return ast.NewObject(
		b.str(kMessage, e.Message),
		number(kLine, e.Line),
		number(kCol, e.Col),
	)
}
