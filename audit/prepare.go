package audit

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Limits on what one record may hold. Input and Detail have their own, configurable
// limit (Options.MaxInputBytes).
const (
	maxJSONDepth   = 64
	maxNameLen     = 512      // principal, role, ids, decision, revision, rule
	maxMessageLen  = 64 << 10 // reason messages, execution error
	maxReasons     = 1024
	maxSafeInteger = 1<<53 - 1 // larger integers are not exact in RFC 8785 numbers
)

// prepared is a record validated, masked and encoded by the appender, ready for the
// writer to chain.
type prepared struct {
	f     canonicalFields[string] // without seq, id, time
	rules string                  // " rule1 rule2 ", or "" without reasons
	body  string                  // " word1 word2 ... ", the free-text index entry
	rec   Record                  // the record as it will be stored (masked)
}

// prepare validates r, masks its secrets and encodes its JSON parts. It runs on the
// appender's goroutine so that this work is spread over the callers.
func (s *Store) prepare(r Record) (*prepared, error) {
	if !r.Kind.Valid() {
		return nil, &RecordError{"kind", fmt.Sprintf("unknown kind %q (want one of decision, execution, approval, grant, policy_load, auth_failure)", sanitize(string(r.Kind)))}
	}
	for _, f := range []struct{ name, v string }{
		{"principal.name", r.Principal.Name}, {"principal.role", r.Principal.Role},
		{"request_id", r.RequestID}, {"decision_id", r.DecisionID},
		{"decision", r.Decision}, {"revision", r.Revision},
	} {
		if err := checkName(f.name, f.v); err != nil {
			return nil, err
		}
	}
	if r.Kind == KindDecision && r.DecisionID != "" {
		return nil, &RecordError{"decision_id", "a decision record is its own decision: decision_id must be empty"}
	}
	if len(r.Reasons) > maxReasons {
		return nil, &RecordError{"reasons", fmt.Sprintf("%d reasons, at most %d", len(r.Reasons), maxReasons)}
	}
	tmpl := r.InputTemplate
	if tmpl != nil {
		if len(r.Input) > 0 {
			return nil, &RecordError{"input", "both an input and an input template"}
		}
		plainLen := len(tmpl.plainBefore) + len(r.RequestID) + 2 + len(tmpl.plainAfter)
		if tmpl.masker != s.masker || plainLen > s.opts.MaxInputBytes || !tmpl.idStands(r.RequestID) {
			// Another store's masking, or masking would touch the id.
			return s.prepareWhole(r)
		}
	}
	p := &prepared{}
	p.rec = r
	p.rec.Seq, p.rec.ID, p.rec.PrevHash, p.rec.Hash = 0, "", "", ""
	p.rec.InputTemplate = nil
	p.rec.Reasons = make([]Reason, len(r.Reasons))
	for i, rs := range r.Reasons {
		field := fmt.Sprintf("reasons[%d]", i)
		if err := checkName(field+".rule", rs.Rule); err != nil {
			return nil, err
		}
		if strings.ContainsFunc(rs.Rule, unicode.IsSpace) {
			return nil, &RecordError{field + ".rule", "contains white space"}
		}
		if err := checkText(field+".message", rs.Message, maxMessageLen); err != nil {
			return nil, err
		}
		if rs.Command != nil && (*rs.Command < 0 || *rs.Command > maxSafeInteger) {
			return nil, &RecordError{field + ".command", "must be a command index (0 or more)"}
		}
		p.rec.Reasons[i] = rs
		if rs.Command != nil {
			c := *rs.Command
			p.rec.Reasons[i].Command = &c
		}
	}
	if e := r.Execution; e != nil {
		for _, n := range []struct {
			name string
			v    int64
		}{{"exit_code", int64(e.ExitCode)}, {"duration_ms", e.DurationMS}, {"stdout_bytes", e.StdoutBytes}, {"stderr_bytes", e.StderrBytes}} {
			if n.v > maxSafeInteger || n.v < -maxSafeInteger {
				return nil, &RecordError{"execution." + n.name, "out of range"}
			}
		}
		if err := checkText("execution.error", e.Error, maxMessageLen); err != nil {
			return nil, err
		}
		ex := *e
		p.rec.Execution = &ex
	}

	// Mask: first pass over every part, collecting the secret values it finds...
	var st maskState
	input, inputArenas, err := s.parseDoc("input", r.Input)
	if err != nil {
		return nil, err
	}
	defer inputArenas.release()
	detail, detailArenas, err := s.parseDoc("detail", r.Detail)
	if err != nil {
		return nil, err
	}
	defer detailArenas.release()
	if input != nil {
		s.masker.walk(input, &st)
	}
	if detail != nil {
		s.masker.walk(detail, &st)
	}
	for i := range p.rec.Reasons {
		p.rec.Reasons[i].Message = s.masker.maskText(p.rec.Reasons[i].Message, &st)
	}
	if p.rec.Execution != nil {
		p.rec.Execution.Error = s.masker.maskText(p.rec.Execution.Error, &st)
	}
	if tmpl != nil {
		if len(st.found) > 0 {
			// A secret found outside the input would be replaced in it too, which its
			// template cannot do.
			return s.prepareWhole(r)
		}
		for _, v := range tmpl.found { // already replaced in the template's input
			st.add(v)
		}
	}
	// ...then replace those values wherever else they occur.
	if len(st.found) > 0 {
		st.finish()
		if input != nil {
			replaceInValue(input, &st)
		}
		if detail != nil {
			replaceInValue(detail, &st)
		}
		for i := range p.rec.Reasons {
			p.rec.Reasons[i].Message = st.replaceFound(p.rec.Reasons[i].Message)
		}
		if p.rec.Execution != nil {
			p.rec.Execution.Error = st.replaceFound(p.rec.Execution.Error)
		}
	}

	f := &p.f
	f.kind = string(r.Kind)
	f.principal, f.role = r.Principal.Name, r.Principal.Role
	f.requestID, f.decisionID = r.RequestID, r.DecisionID
	f.decision, f.revision = r.Decision, r.Revision
	p.rec.Input, p.rec.Detail = nil, nil
	// The canonical form is rarely longer than the document it came from.
	switch {
	case tmpl != nil:
		p.rec.Input = tmpl.masked(r.RequestID)
		f.input = bytesString(p.rec.Input)
	case input != nil:
		p.rec.Input = appendCanonical(make([]byte, 0, len(r.Input)+64), input)
		f.input = bytesString(p.rec.Input)
	}
	if detail != nil {
		p.rec.Detail = appendCanonical(make([]byte, 0, len(r.Detail)+64), detail)
		f.detail = bytesString(p.rec.Detail)
	}
	f.reasons = string(appendCanonicalReasons(nil, p.rec.Reasons))
	f.execution = string(appendCanonicalExecution(nil, p.rec.Execution))

	// Rules for the rule index, and the free-text body: the distinct words of the
	// record's strings.
	if len(p.rec.Reasons) > 0 {
		var rules []string
		for _, rs := range p.rec.Reasons {
			if rs.Rule != "" && !slices.Contains(rules, rs.Rule) {
				rules = append(rules, rs.Rule)
			}
		}
		if len(rules) > 0 {
			p.rules = " " + strings.Join(rules, " ") + " "
		}
	}
	sc := scratchPool.Get().(*scratch)
	w := append(sc.strs[:0], r.Principal.Name, r.Principal.Role, r.RequestID, r.DecisionID, string(r.Kind), r.Decision, r.Revision)
	for _, rs := range p.rec.Reasons {
		w = append(w, rs.Rule, rs.Message)
	}
	if p.rec.Execution != nil {
		w = append(w, p.rec.Execution.Error)
	}
	if input != nil {
		w = stringLeaves(input, w)
	}
	detailFrom := len(w) // a template's words go before the detail's
	if detail != nil {
		w = stringLeaves(detail, w)
	}
	// The distinct words, in first-seen order; a set of 64-bit hashes finds repeats
	// (a collision would only drop a word from the search body).
	toks := sc.words[:0]
	for _, s := range w[:detailFrom] {
		toks = appendWords(toks, s)
	}
	if tmpl != nil {
		// The id's words are RequestID's, taken above: the body is the same.
		toks = append(toks, tmpl.words...)
	}
	for _, s := range w[detailFrom:] {
		toks = appendWords(toks, s)
	}
	clear(sc.seen)
	n, kept := 1, toks[:0]
	for _, t := range toks {
		h := maphash.String(wordSeed, t)
		if _, dup := sc.seen[h]; dup {
			continue
		}
		sc.seen[h] = struct{}{}
		kept = append(kept, t)
		n += len(t) + 1
	}
	toks = kept
	var body strings.Builder
	body.Grow(n)
	body.WriteByte(' ')
	for _, t := range toks {
		body.WriteString(t)
		body.WriteByte(' ')
	}
	p.body = body.String()
	clear(w)
	clear(toks[:cap(toks)])
	sc.strs, sc.words = w[:0], toks[:0]
	scratchPool.Put(sc)
	return p, nil
}

// prepareWhole prepares a record given with an input template from its whole input, as
// if the template had not been used.
func (s *Store) prepareWhole(r Record) (*prepared, error) {
	r.Input, r.InputTemplate = r.InputTemplate.plain(r.RequestID), nil
	return s.prepare(r)
}

// bytesString is b as a string without a copy. prepare uses it for the canonical
// fields, which the writer hashes and inserts before Append returns the record that
// holds b: nothing changes b while the string is in use.
func bytesString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// scratch is reusable memory for prepare.
type scratch struct {
	strs, words []string
	seen        map[uint64]struct{}
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{make([]string, 0, 64), make([]string, 0, 128), make(map[uint64]struct{}, 128)}
}}

var wordSeed = maphash.MakeSeed()

func stringLeaves(v *jsonValue, dst []string) []string {
	switch v.kind {
	case jsonString:
		dst = append(dst, v.s)
	case jsonArray, jsonObject:
		for i := range v.kids {
			dst = stringLeaves(&v.kids[i].val, dst)
		}
	}
	return dst
}

// parseDoc parses an Input or Detail document; nil for an absent or null one. The
// caller releases the arenas once done with the value.
func (s *Store) parseDoc(field string, raw json.RawMessage) (*jsonValue, jsonArenas, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	if len(raw) > s.opts.MaxInputBytes {
		return nil, nil, &RecordError{field, fmt.Sprintf("%d bytes, more than the limit of %d", len(raw), s.opts.MaxInputBytes)}
	}
	v, arenas, err := parseJSONReusing(raw, maxJSONDepth)
	if err != nil {
		return nil, nil, &RecordError{field, "not valid JSON: " + err.Error()}
	}
	if v.kind == jsonNull {
		return nil, arenas, nil
	}
	return &v, arenas, nil
}

// checkText refuses invalid UTF-8, NUL bytes and over-long values. The message never
// quotes the value.
func checkText(field, v string, limit int) error {
	switch {
	case len(v) > limit:
		return &RecordError{field, fmt.Sprintf("%d bytes, more than the limit of %d", len(v), limit)}
	case !utf8.ValidString(v):
		return &RecordError{field, "invalid UTF-8"}
	case strings.IndexByte(v, 0) >= 0:
		return &RecordError{field, "contains a NUL byte"}
	}
	return nil
}

// checkName is checkText for identifiers (names, ids, decisions, revisions, rules):
// they also refuse control characters.
func checkName(field, v string) error {
	if err := checkText(field, v, maxNameLen); err != nil {
		return err
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return &RecordError{field, "contains a control character"}
	}
	return nil
}

// sanitize shortens and quotes-safe a short value for an error message.
func sanitize(s string) string {
	if len(s) > 32 {
		s = s[:32] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// appendWords appends the words of s, lowercased: runs of letters, digits, marks and
// private-use characters, everything else separating them. SQLite's unicode61
// tokenizer (without diacritic removal) splits text the same way, so the words stored
// in records.body are the tokens records_fts indexes, and the query side splits its
// text with this function too.
func appendWords(dst []string, s string) []string {
	start := -1
	for i := 0; i <= len(s); {
		word, size := false, 1
		if i < len(s) {
			if c := s[i]; c < utf8.RuneSelf {
				word = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(s[i:])
				word = unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.In(r, unicode.Co, unicode.M)
			}
		}
		if word && start < 0 {
			start = i
		} else if !word && start >= 0 {
			dst = append(dst, lowerWord(s[start:i]))
			start = -1
		}
		i += size
	}
	return dst
}

func lowerWord(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}
