package policies

import (
	"github.com/open-policy-agent/opa/v1/ast"
)

// toolsPackage and checkRule name the tool rules: check(key, command) in package
// cmdgate.tools.
var toolsPackage = ast.MustParseRef("data.cmdgate.tools")

const checkRule = "check"

// checkedKeys lists the tool keys the bundle has check() rules for, so that the
// policy calls check() only for commands of those tools (data.cmdgate.checked_keys,
// read by data.cmdgate.lib.computed_index). It recognizes a rule whose body compares
// the first argument with a string (`check(k, c) := ... if k == "git"`); when any
// check rule has another form, ok is false and every tool is treated as checked.
func checkedKeys(modules map[string]*ast.Module) (keys []any, ok bool) {
	seen := map[string]bool{}
	for _, m := range modules {
		if !m.Package.Path.Equal(toolsPackage) {
			continue
		}
		for _, r := range m.Rules {
			if r.Head.Name.String() != checkRule || len(r.Head.Args) != 2 {
				continue
			}
			k, found := comparedKey(r)
			if !found {
				return nil, false
			}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys, true
}

// comparedKey finds `arg0 == "string"` (or `"string" == arg0`) in the rule's body.
func comparedKey(r *ast.Rule) (string, bool) {
	arg, ok := r.Head.Args[0].Value.(ast.Var)
	if !ok {
		if s, ok := r.Head.Args[0].Value.(ast.String); ok {
			return string(s), true
		}
		return "", false
	}
	for _, expr := range r.Body {
		if !expr.IsCall() || expr.Negated || len(expr.Operands()) != 2 {
			continue
		}
		op := expr.Operator().String()
		if op != ast.Equal.Name && op != ast.Equality.Name {
			continue
		}
		a, b := expr.Operands()[0], expr.Operands()[1]
		if v, ok := a.Value.(ast.Var); ok && v.Equal(arg) {
			if s, ok := b.Value.(ast.String); ok {
				return string(s), true
			}
		}
		if v, ok := b.Value.(ast.Var); ok && v.Equal(arg) {
			if s, ok := a.Value.(ast.String); ok {
				return string(s), true
			}
		}
	}
	return "", false
}
