package audit

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Marker replaces every masked value. Values are replaced, never hashed: a hash of a
// short secret can be brute-forced.
const Marker = "****"

// DefaultSecretNames are the default MaskOptions.Names: patterns of variable names, JSON
// keys, option names, header names and query parameters whose values are secret.
// Matching ignores case and treats '-' and '.' as '_'; '*' matches any run of characters.
func DefaultSecretNames() []string {
	return []string{
		"*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*", "*PASSPHRASE*", "PASS", "*_PASS",
		"*_PWD", "*KEY*", "*CREDENTIAL*", "*AUTHORIZATION*", "AUTH", "*_AUTH", "AUTH_*",
		"*COOKIE*", "*SESSION*", "*PRIVATE*", "*SIGNATURE*", "*BEARER*", "*API_KEY*",
	}
}

// DefaultSecretFlags are the default MaskOptions.Flags: options whose value is secret
// although their name does not say so, as "OPTION" (any command) or "COMMAND:OPTION"
// (only when argv[0]'s base name matches the COMMAND pattern, where '*' matches any run
// of characters).
func DefaultSecretFlags() []string {
	return []string{
		"sshpass:-p", "mysql*:-p", "mariadb*:-p", "docker:-p", "podman:-p",
		"curl:-u", "curl:--user", "curl:-U", "curl:--proxy-user", "curl:-b",
		"wget:--user", "htpasswd:-b",
	}
}

// DefaultValuePrefixes are the default MaskOptions.ValuePrefixes: prefixes of credential
// formats that are masked wherever they appear, followed by at least 16 token characters.
func DefaultValuePrefixes() []string {
	return []string{
		"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "xoxb-", "xoxp-",
		"xoxa-", "xoxr-", "xoxs-", "xapp-", "sk-", "sk_live_", "sk_test_", "rk_live_",
		"AKIA", "ASIA", "AIza", "npm_", "pypi-", "hf_", "eyJ", "dop_v1_", "shpat_",
	}
}

// MaskOptions configures what Append masks before anything is stored. The zero value
// uses the defaults; a non-nil list replaces its default (append to DefaultSecretNames()
// and friends to extend them).
//
// What is masked, in the policy input, Detail, reason messages and Execution.Error:
//   - the value of every JSON object member whose key matches Names (every string and
//     number below it, so commands[].env catches FOO_TOKEN);
//   - in every string: NAME=value and NAME: value where NAME matches Names (shell
//     assignments, --db-password=x, query parameters, "Authorization: Bearer x" up to the
//     end of the line, "password": "x" inside JSON text), credentials in URLs
//     (https://user:pass@host keeps the user, https://token@host masks the token),
//     "Bearer x", "--token x" pairs separated by white space, PEM private key blocks, and
//     values starting with ValuePrefixes;
//   - in every array of strings (argv): the element after an option whose name matches
//     Names (--token x, -password x), and the value of the options listed in Flags
//     (separate or attached: sshpass -p x, mysql -px);
//   - then every other occurrence, anywhere in the record, of a value found above (a
//     token given as --token x also appears in operands[].text and request.raw).
//     Values shorter than 4 bytes are replaced only where a whole string equals them.
type MaskOptions struct {
	Names         []string
	Flags         []string
	ValuePrefixes []string
}

// minValueLen is the least number of token characters after a value prefix.
const minValueLen = 16

// minGlobalLen is the least length of a found secret replaced inside longer strings.
const minGlobalLen = 4

// Masker masks secrets in JSON documents and text. It is safe for concurrent use.
type Masker struct {
	names    []string // normalized glob patterns
	flags    []flagRule
	prefixes []string
	byFirst  [256][]int                      // indexes in prefixes, by their first byte
	cache    atomic.Pointer[map[string]bool] // IsSecretName results, copy on write
	cacheMu  sync.Mutex
}

type flagRule struct {
	command string // glob on argv[0]'s base name; empty for any command
	flag    string
}

const maxCachedNames = 1024

func mapLen(m *map[string]bool) int {
	if m == nil {
		return 0
	}
	return len(*m)
}

// NewMasker compiles the options.
func NewMasker(o MaskOptions) (*Masker, error) {
	m := &Masker{}
	names := o.Names
	if names == nil {
		names = DefaultSecretNames()
	}
	for _, p := range names {
		n := normalizeName(p)
		if n == "" {
			return nil, fmt.Errorf("mask names: empty pattern %q", p)
		}
		m.names = append(m.names, n)
	}
	flags := o.Flags
	if flags == nil {
		flags = DefaultSecretFlags()
	}
	for _, f := range flags {
		cmd, flag, ok := strings.Cut(f, ":")
		if !ok {
			cmd, flag = "", f
		}
		if !strings.HasPrefix(flag, "-") || len(flag) < 2 {
			return nil, fmt.Errorf("mask flags: %q: the option must start with '-'", f)
		}
		m.flags = append(m.flags, flagRule{cmd, flag})
	}
	prefixes := o.ValuePrefixes
	if prefixes == nil {
		prefixes = DefaultValuePrefixes()
	}
	for _, p := range prefixes {
		if len(p) < 2 {
			return nil, fmt.Errorf("mask value prefixes: %q is shorter than 2 characters", p)
		}
		m.byFirst[p[0]] = append(m.byFirst[p[0]], len(m.prefixes))
		m.prefixes = append(m.prefixes, p)
	}
	return m, nil
}

// normalizeName uppercases ASCII letters, maps '-' and '.' to '_' and drops leading
// dashes (option names).
func normalizeName(s string) string {
	s = strings.TrimLeft(s, "-")
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 'a' + 'A'
		case c == '-' || c == '.':
			b[i] = '_'
		}
	}
	return string(b)
}

// IsSecretName reports whether values named name are masked.
func (m *Masker) IsSecretName(name string) bool {
	cache := m.cache.Load()
	if cache != nil {
		if v, ok := (*cache)[name]; ok {
			return v
		}
	}
	n := normalizeName(name)
	found := false
	if n != "" {
		for _, p := range m.names {
			if globMatch(p, n) {
				found = true
				break
			}
		}
	}
	// Names repeat (JSON keys, environment variables): remember them, up to a bound.
	m.cacheMu.Lock()
	defer m.cacheMu.Unlock()
	old := m.cache.Load()
	if old == nil || len(*old) < maxCachedNames {
		next := make(map[string]bool, 1+mapLen(old))
		if old != nil {
			maps.Copy(next, *old)
		}
		next[strings.Clone(name)] = found
		m.cache.Store(&next)
	}
	return found
}

// globMatch matches name against pattern, where '*' matches any run of bytes.
func globMatch(pattern, name string) bool {
	px, nx := 0, 0
	starP, starN := -1, 0
	for nx < len(name) {
		switch {
		case px < len(pattern) && pattern[px] == '*':
			starP, starN = px, nx
			px++
		case px < len(pattern) && pattern[px] == name[nx]:
			px++
			nx++
		case starP >= 0:
			starN++
			px, nx = starP+1, starN
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// maskState carries what one record's masking found, for the second pass.
type maskState struct {
	found map[string]struct{}
	list  []string // found, longest first, built by finish
}

func (st *maskState) add(v string) {
	if v == "" || v == Marker {
		return
	}
	if st.found == nil {
		st.found = make(map[string]struct{})
	}
	st.found[v] = struct{}{}
}

func (st *maskState) finish() {
	st.list = st.list[:0]
	for v := range st.found {
		st.list = append(st.list, v)
	}
	slices.SortFunc(st.list, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
}

// replaceFound replaces the found secrets in s: inside s for the long ones, when s is
// exactly the value for the short ones.
func (st *maskState) replaceFound(s string) string {
	for _, v := range st.list {
		if len(v) >= minGlobalLen {
			if strings.Contains(s, v) {
				s = strings.ReplaceAll(s, v, Marker)
			}
		} else if s == v {
			return Marker
		}
	}
	return s
}

// MaskJSON returns the canonical (RFC 8785) form of the JSON document with its secrets
// masked.
func (m *Masker) MaskJSON(doc []byte) ([]byte, error) {
	v, err := parseJSON(doc, maxJSONDepth)
	if err != nil {
		return nil, err
	}
	var st maskState
	m.walk(&v, &st)
	if len(st.found) > 0 {
		st.finish()
		replaceInValue(&v, &st)
	}
	return appendCanonical(nil, &v), nil
}

// MaskText masks the secrets of one string (the text rules only).
func (m *Masker) MaskText(s string) string {
	var st maskState
	s = m.maskText(s, &st)
	if len(st.found) > 0 {
		st.finish()
		s = st.replaceFound(s)
	}
	return s
}

// walk applies the first pass to v: key rules, argv rules, text rules.
func (m *Masker) walk(v *jsonValue, st *maskState) {
	switch v.kind {
	case jsonString:
		v.s = m.maskText(v.s, st)
	case jsonArray:
		allStrings := len(v.kids) > 0
		for i := range v.kids {
			if v.kids[i].val.kind != jsonString {
				allStrings = false
				break
			}
		}
		if allStrings {
			m.maskArgv(v.kids, st)
		}
		for i := range v.kids {
			m.walk(&v.kids[i].val, st)
		}
	case jsonObject:
		for i := range v.kids {
			if m.IsSecretName(v.kids[i].key) {
				maskAll(&v.kids[i].val, st)
			} else {
				m.walk(&v.kids[i].val, st)
			}
		}
	}
}

// maskAll replaces every string and number below v by Marker, keeping the shape.
func maskAll(v *jsonValue, st *maskState) {
	switch v.kind {
	case jsonString, jsonNumber:
		st.add(v.s)
		*v = jsonValue{kind: jsonString, s: Marker}
	case jsonArray, jsonObject:
		for i := range v.kids {
			maskAll(&v.kids[i].val, st)
		}
	}
}

func replaceInValue(v *jsonValue, st *maskState) {
	switch v.kind {
	case jsonString:
		v.s = st.replaceFound(v.s)
	case jsonArray, jsonObject:
		for i := range v.kids {
			replaceInValue(&v.kids[i].val, st)
		}
	}
}

// maskArgv applies the option rules to an array of strings.
func (m *Masker) maskArgv(arr []jsonMember, st *maskState) {
	var rules []flagRule // the Flags that apply to this command, computed on first use
	rulesDone := false
	secretNext := false
	for i := range arr {
		w := arr[i].val.s
		if secretNext {
			secretNext = false
			st.add(w)
			arr[i].val.s = Marker
			continue
		}
		if len(w) < 2 || w[0] != '-' || w == "--" {
			continue
		}
		if !strings.Contains(w, "=") && m.IsSecretName(w) && i+1 < len(arr) && !strings.HasPrefix(arr[i+1].val.s, "-") {
			secretNext = true
			continue
		}
		if !rulesDone {
			rulesDone = true
			cmd := path.Base(strings.ReplaceAll(arr[0].val.s, `\`, "/"))
			for _, f := range m.flags {
				if f.command != "" && !globMatch(f.command, cmd) {
					continue
				}
				rules = append(rules, f)
			}
		}
		for _, f := range rules {
			switch {
			case w == f.flag:
				secretNext = i+1 < len(arr)
			case strings.HasPrefix(w, f.flag+"="):
				st.add(w[len(f.flag)+1:])
				arr[i].val.s = f.flag + "=" + Marker
			case len(f.flag) == 2 && strings.HasPrefix(w, f.flag) && w[2] != '=':
				// attached short option value: -pSECRET
				st.add(w[2:])
				arr[i].val.s = f.flag + Marker
			default:
				continue
			}
			break
		}
	}
}

// span is a byte range of a string to mask.
type span struct{ start, end int }

// maskText applies the text rules to s.
func (m *Masker) maskText(s string, st *maskState) string {
	if len(s) < 3 {
		return s
	}
	var spans []span
	hasSpace := strings.ContainsAny(s, " \t\n")
	if strings.ContainsAny(s, "=:") {
		spans = m.assignmentSpans(s, spans)
	}
	if strings.Contains(s, "://") {
		spans = urlSpans(s, spans)
	}
	if hasSpace {
		spans = m.optionSpans(s, spans)
		spans = schemeSpans(s, spans)
	}
	if len(s) >= minValueLen {
		spans = m.prefixSpans(s, spans)
		if strings.Contains(s, "-----BEGIN") {
			spans = pemSpans(s, spans)
		}
	}
	if len(spans) == 0 {
		return s
	}
	for _, sp := range spans {
		st.add(s[sp.start:sp.end])
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for i := 0; i < len(spans); {
		cur := spans[i]
		i++
		for i < len(spans) && spans[i].start <= cur.end {
			cur.end = max(cur.end, spans[i].end)
			i++
		}
		b.WriteString(s[last:cur.start])
		b.WriteString(Marker)
		last = cur.end
	}
	b.WriteString(s[last:])
	return b.String()
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// assignmentSpans finds NAME=value and NAME: value with a secret NAME.
func (m *Masker) assignmentSpans(s string, spans []span) []span {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '=' && c != ':' {
			continue
		}
		// The name ends at i, or before a closing quote and blanks for ':'.
		j := i
		if c == ':' {
			for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
				j--
			}
			if j > 0 && (s[j-1] == '"' || s[j-1] == '\'') {
				j--
			}
		}
		end := j
		for j > 0 && isNameByte(s[j-1]) {
			j--
		}
		if j == end || !m.IsSecretName(s[j:end]) {
			continue
		}
		// The value.
		k := i + 1
		if c == ':' {
			if k < len(s) && s[k] == '/' {
				continue // a URL scheme ("token://..."), handled by urlSpans
			}
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
		}
		if k >= len(s) {
			continue
		}
		var vs, ve int
		switch q := s[k]; {
		case q == '"' || q == '\'':
			vs = k + 1
			ve = vs
			for ve < len(s) && s[ve] != q {
				if s[ve] == '\\' && ve+1 < len(s) {
					ve++
				}
				ve++
			}
		case c == ':':
			// A header-like value runs to the end of the line or of the quoted text.
			vs, ve = k, k
			for ve < len(s) && s[ve] != '\n' && s[ve] != '\r' && s[ve] != '"' && s[ve] != '\'' {
				ve++
			}
		default:
			vs, ve = k, k
			for ve < len(s) && !isSpace(s[ve]) && !strings.ContainsRune("&;|\"'`<>", rune(s[ve])) {
				ve++
			}
		}
		for ve > vs && isSpace(s[ve-1]) {
			ve--
		}
		if ve > vs {
			spans = append(spans, span{vs, ve})
			i = ve - 1
		}
	}
	return spans
}

// urlSpans finds credentials in URLs: scheme://user:password@host.
func urlSpans(s string, spans []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], "://")
		if i < 0 {
			return spans
		}
		start := off + i + 3
		off = start
		end := start
		for end < len(s) && !strings.ContainsRune("/?# \t\n\r\"'<>`", rune(s[end])) {
			end++
		}
		at := strings.LastIndexByte(s[start:end], '@')
		if at <= 0 {
			continue
		}
		userinfo := s[start : start+at]
		if colon := strings.IndexByte(userinfo, ':'); colon >= 0 {
			if colon+1 < len(userinfo) {
				spans = append(spans, span{start + colon + 1, start + at})
			}
		} else {
			spans = append(spans, span{start, start + at})
		}
	}
}

// optionSpans finds "--secret-name value" pairs in text (a raw script).
func (m *Masker) optionSpans(s string, spans []span) []span {
	for i := 0; i < len(s); i++ {
		if s[i] != '-' || (i > 0 && !isSpace(s[i-1]) && s[i-1] != '"' && s[i-1] != '\'') {
			continue
		}
		j := i
		for j < len(s) && isNameByte(s[j]) {
			j++
		}
		name := s[i:j]
		if j >= len(s) || !isSpace(s[j]) || strings.Trim(name, "-") == "" {
			i = j
			continue
		}
		if !m.IsSecretName(name) {
			i = j
			continue
		}
		k := j
		for k < len(s) && isSpace(s[k]) {
			k++
		}
		if k >= len(s) || s[k] == '-' {
			i = j
			continue
		}
		vs, ve := k, k
		if q := s[k]; q == '"' || q == '\'' {
			vs, ve = k+1, k+1
			for ve < len(s) && s[ve] != q {
				ve++
			}
		} else {
			for ve < len(s) && !isSpace(s[ve]) && !strings.ContainsRune(";|&)`", rune(s[ve])) {
				ve++
			}
		}
		if ve > vs {
			spans = append(spans, span{vs, ve})
		}
		i = ve
	}
	return spans
}

// schemeSpans finds the credentials after "Bearer " (any case) and after "Basic " when
// they look like base64.
func schemeSpans(s string, spans []span) []span {
	lower := strings.ToLower(s)
	for _, scheme := range []string{"bearer", "basic"} {
		for off := 0; ; {
			i := strings.Index(lower[off:], scheme)
			if i < 0 {
				break
			}
			i += off
			off = i + len(scheme)
			if i > 0 && isNameByte(s[i-1]) {
				continue
			}
			k := off
			if k >= len(s) || (s[k] != ' ' && s[k] != '\t') {
				continue
			}
			for k < len(s) && (s[k] == ' ' || s[k] == '\t') {
				k++
			}
			e := k
			for e < len(s) && !isSpace(s[e]) && s[e] != '"' && s[e] != '\'' && s[e] != ',' {
				e++
			}
			if scheme == "basic" && (e-k < 8 || strings.IndexFunc(s[k:e], func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '=')
			}) >= 0) {
				continue
			}
			if e > k {
				spans = append(spans, span{k, e})
			}
			off = e
		}
	}
	return spans
}

func isTokenByte(c byte) bool {
	return isNameByte(c) || c == '+' || c == '/' || c == '='
}

// prefixSpans finds values that start with a known credential prefix.
//
// One scan of s looks up the prefixes by the byte at each position; a prefix is
// looked for again only after its last occurrence (or the value that followed it).
func (m *Masker) prefixSpans(s string, spans []span) []span {
	var next []int // per prefix, where it may occur next; allocated on the first hit
	for i := 0; i < len(s); i++ {
		for _, pi := range m.byFirst[s[i]] {
			p := m.prefixes[pi]
			if next != nil && i < next[pi] || !strings.HasPrefix(s[i:], p) {
				continue
			}
			if next == nil {
				next = make([]int, len(m.prefixes))
			}
			off := i + len(p)
			next[pi] = off
			if i > 0 && (isNameByte(s[i-1]) && s[i-1] != '.' || s[i-1] == '+' || s[i-1] == '/') {
				continue
			}
			e := off
			for e < len(s) && isTokenByte(s[e]) {
				e++
			}
			if e-off >= minValueLen {
				spans = append(spans, span{off, e})
				next[pi] = e
			}
		}
	}
	return spans
}

// pemSpans masks the body of PEM blocks whose type mentions PRIVATE KEY.
func pemSpans(s string, spans []span) []span {
	for off := 0; ; {
		i := strings.Index(s[off:], "-----BEGIN ")
		if i < 0 {
			return spans
		}
		i += off
		hdrEnd := strings.Index(s[i+11:], "-----")
		if hdrEnd < 0 {
			return spans
		}
		typ := s[i+11 : i+11+hdrEnd]
		bodyStart := i + 11 + hdrEnd + 5
		off = bodyStart
		if !strings.Contains(typ, "PRIVATE KEY") {
			continue
		}
		bodyEnd := len(s)
		if j := strings.Index(s[bodyStart:], "-----END"); j >= 0 {
			bodyEnd = bodyStart + j
		}
		if bodyEnd > bodyStart {
			spans = append(spans, span{bodyStart, bodyEnd})
		}
		off = bodyEnd
	}
}
