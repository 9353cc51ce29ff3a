package policies

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/cmdgate/cmdgate/parse"
)

// routes is a bundle's routing of commands to its kinds of per-command check, the
// table the bundle computes at load (data.cmdgate.routes: "names", name -> the kinds a
// contained and an open command of that name can meet, and "kinds", every kind). The
// engine adds the routing of each request to its input as "routed" (kind -> the
// indices of the commands routed to it, kinds without commands left out), so that a
// rule of one kind evaluates only its commands instead of testing every command; an
// input without the field has every command routed to every kind
// (lib.computed_routed).
type routes struct {
	kinds  []*ast.Term       // every kind, in the bundle's order
	byName map[string]*route // names without a slash
	all    []int             // every kind's position in kinds
}

// route is the positions in routes.kinds of the kinds a command of one name can meet,
// and the triggers of some of them.
type route struct {
	contained, open []int
	triggers        []trigger
}

// trigger is a kind whose check first matches re against a command's words joined by
// newlines: the command meets the kind only when they match.
type trigger struct {
	kind int
	re   *regexp.Regexp
}

var kRouted = key("routed")

// routesOf reads a bundle's routing table (nil, no routing, when the bundle computes
// none).
func routesOf(data map[string]any) (*routes, error) {
	table, _ := lookup(data, "cmdgate", "routes").(map[string]any)
	byName, ok1 := table["names"].(map[string]any)
	kinds, ok2 := table["kinds"].([]any)
	if !ok1 || !ok2 {
		return nil, nil
	}
	rt := &routes{byName: make(map[string]*route, len(byName))}
	pos := make(map[string]int, len(kinds))
	for i, k := range kinds {
		s, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("routes kinds[%d] is %T, not a string", i, k)
		}
		pos[s] = i
		rt.kinds = append(rt.kinds, ast.StringTerm(s))
		rt.all = append(rt.all, i)
	}
	positions := func(name, which string, v any) ([]int, error) {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("routes names[%q].%s is %T, not an array", name, which, v)
		}
		out := make([]int, 0, len(list))
		for _, k := range list {
			s, _ := k.(string)
			p, ok := pos[s]
			if !ok {
				return nil, fmt.Errorf("routes names[%q].%s names %v, not one of the kinds", name, which, k)
			}
			out = append(out, p)
		}
		return out, nil
	}
	for name, v := range byName {
		m, _ := v.(map[string]any)
		r := &route{}
		var err error
		if r.contained, err = positions(name, "contained", m["contained"]); err != nil {
			return nil, err
		}
		if r.open, err = positions(name, "open", m["open"]); err != nil {
			return nil, err
		}
		if r.triggers, err = triggersOf(name, m["triggers"], pos); err != nil {
			return nil, err
		}
		rt.byName[name] = r
	}
	return rt, nil
}

// triggersOf reads a name's triggers (kind -> regular expression; absent, none). An
// expression that does not compile fails the bundle's load: the check would never
// match it either (OPA's regex.match, the same package), and a check that can never
// apply is a policy error to report, not to route around.
func triggersOf(name string, v any, pos map[string]int) ([]trigger, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("routes names[%q].triggers is %T, not an object", name, v)
	}
	var ts []trigger
	for k, x := range m {
		p, ok := pos[k]
		if !ok {
			return nil, fmt.Errorf("routes names[%q].triggers names %q, not one of the kinds", name, k)
		}
		expr, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("routes names[%q].triggers[%q] is %T, not a string", name, k, x)
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("routes names[%q].triggers[%q]: %w", name, k, err)
		}
		ts = append(ts, trigger{kind: p, re: re})
	}
	return ts, nil
}

// lookup is data[p0][p1]..., nil when absent.
func lookup(data map[string]any, p ...string) any {
	var v any = data
	for _, k := range p {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// kindsOf is the route of a command: its name's, by whether it is contained, less the
// kinds whose trigger its words do not match, or every kind for a name the table does
// not route (a path, a run-time or unknown name).
func (rt *routes) kindsOf(c *parse.Command) []int {
	r := rt.byName[c.Path]
	if r == nil {
		return rt.all
	}
	ks := r.open
	if Contained(c) {
		ks = r.contained
	}
	if len(r.triggers) == 0 {
		return ks
	}
	words := strings.Join(c.Argv, "\n")
	var out []int
	for _, t := range r.triggers {
		if t.re.MatchString(words) {
			continue
		}
		if out == nil {
			out = append(make([]int, 0, len(ks)), ks...)
		}
		out = slices.DeleteFunc(out, func(k int) bool { return k == t.kind })
	}
	if out == nil {
		return ks
	}
	return out
}

// value is the "routed" input field of doc: kind -> the indices of its commands.
func (rt *routes) value(doc *parse.Document) ast.Value {
	kinds := make([][]int, len(doc.Commands))
	counts := make([]int, len(rt.kinds))
	total := 0
	for i := range doc.Commands {
		kinds[i] = rt.kindsOf(&doc.Commands[i])
		for _, k := range kinds[i] {
			counts[k]++
			total++
		}
	}
	// One block holds every list: each kind's part starts where the one before ends.
	block := make([]*ast.Term, total)
	lists := make([][]*ast.Term, len(rt.kinds))
	n := 0
	for k, c := range counts {
		lists[k] = block[n : n : n+c]
		n += c
	}
	for i, ks := range kinds {
		for _, k := range ks {
			lists[k] = append(lists[k], ast.InternedTerm(i))
		}
	}
	items := make([][2]*ast.Term, 0, len(lists))
	for k, l := range lists {
		if len(l) > 0 {
			items = append(items, [2]*ast.Term{rt.kinds[k], ast.NewTerm(ast.NewArray(l...))})
		}
	}
	return ast.NewObject(items...)
}

// input is the engine's input for doc: InputValue with "routed" when the bundle routes
// (rt is not nil).
func (rt *routes) input(doc *parse.Document) ast.Value { return inputValue(doc, rt) }
