package audit

import (
	"encoding/json"
	"errors"
	"strings"
)

// InputTemplate is a policy input prepared once for the records of many requests that
// differ only in their request id: it is parsed, masked and encoded when it is made,
// and each record that uses it (Record.InputTemplate) gets the input with its own
// RequestID at request.id. The gateway keeps one for each command it remembers, so a
// repeated command's decision record costs no parse of its input.
//
// A record made with a template is stored exactly as the same record with that input
// in Record.Input would be (TestInputTemplateMatchesInput): where the rest of the
// record finds a secret (in a reason, the detail, the id itself) that masking would
// replace in the input too, the template is not used and the input is prepared from
// scratch.
type InputTemplate struct {
	masker *Masker
	// plainBefore and plainAfter are the canonical input before masking, around the
	// id's value; before and after, the masked one.
	plainBefore, plainAfter string
	before, after           string
	words                   []string // the words of its masked string values, in canonical order, but the id's
	found                   []string // the secrets masking found in the input
}

// ErrNoTemplate is returned by PrepareInput for an input that cannot be a template.
var ErrNoTemplate = errors.New("audit: input cannot be a template")

// PrepareInput prepares input, a policy input whose request.id is the empty string, as
// a template for records of this store. It fails with a *RecordError for an input that
// Append would refuse, and with ErrNoTemplate for one that has no empty request.id, or
// whose masking rules would hide the id (a secret name "request" or "id").
func (s *Store) PrepareInput(input json.RawMessage) (*InputTemplate, error) {
	v, arenas, err := s.parseDoc("input", input)
	if err != nil {
		return nil, err
	}
	defer arenas.release() // the template keeps strings, not the tree
	id := templateID(v)
	if id == nil || s.masker.IsSecretName("request") || s.masker.IsSecretName("id") {
		return nil, ErrNoTemplate
	}
	t := &InputTemplate{masker: s.masker}
	t.plainBefore, t.plainAfter = splitCanonical(v, id)
	var st maskState
	s.masker.walk(v, &st)
	if len(st.found) > 0 {
		st.finish()
		replaceInValue(v, &st)
		t.found = st.list
	}
	if id.kind != jsonString || id.s != "" {
		return nil, ErrNoTemplate // masked away by a rule on its value: cannot be
	}
	t.before, t.after = splitCanonical(v, id)
	for _, l := range stringLeavesBut(v, id, nil) {
		t.words = appendWords(t.words, l)
	}
	return t, nil
}

// templateID is the value of request.id, when it is the empty string.
func templateID(v *jsonValue) *jsonValue {
	if v == nil || v.kind != jsonObject {
		return nil
	}
	req := member(v, "request")
	if req == nil || req.kind != jsonObject {
		return nil
	}
	id := member(req, "id")
	if id == nil || id.kind != jsonString || id.s != "" {
		return nil
	}
	return id
}

func member(v *jsonValue, key string) *jsonValue {
	for i := range v.kids {
		if v.kids[i].key == key {
			return &v.kids[i].val
		}
	}
	return nil
}

// splitCanonical is the canonical encoding of v around mark, an empty string value.
func splitCanonical(v, mark *jsonValue) (before, after string) {
	var at int
	var enc func(dst []byte, v *jsonValue) []byte
	enc = func(dst []byte, v *jsonValue) []byte {
		switch v.kind {
		case jsonArray, jsonObject:
			open, end := byte('['), byte(']')
			if v.kind == jsonObject {
				open, end = '{', '}'
			}
			dst = append(dst, open)
			for i := range v.kids {
				if i > 0 {
					dst = append(dst, ',')
				}
				if v.kind == jsonObject {
					dst = appendString(dst, v.kids[i].key)
					dst = append(dst, ':')
				}
				dst = enc(dst, &v.kids[i].val)
			}
			return append(dst, end)
		}
		if v == mark {
			at = len(dst)
		}
		return appendCanonical(dst, v)
	}
	b := string(enc(nil, v))
	return b[:at], b[at+len(`""`):]
}

func stringLeavesBut(v, skip *jsonValue, dst []string) []string {
	switch v.kind {
	case jsonString:
		if v != skip {
			dst = append(dst, v.s)
		}
	case jsonArray, jsonObject:
		for i := range v.kids {
			dst = stringLeavesBut(&v.kids[i].val, skip, dst)
		}
	}
	return dst
}

// plain is the unmasked input with id, as JSON.
func (t *InputTemplate) plain(id string) json.RawMessage {
	b := make([]byte, 0, len(t.plainBefore)+len(id)+2+len(t.plainAfter))
	b = append(b, t.plainBefore...)
	b = appendString(b, id)
	return append(b, t.plainAfter...)
}

// masked is the masked canonical input with id.
func (t *InputTemplate) masked(id string) []byte {
	b := make([]byte, 0, len(t.before)+len(id)+2+len(t.after))
	b = append(b, t.before...)
	b = appendString(b, id)
	return append(b, t.after...)
}

// idStands reports whether masking, with the secrets the input holds, leaves id as it
// is: otherwise the record is prepared from the plain input.
func (t *InputTemplate) idStands(id string) bool {
	var st maskState
	if t.masker.maskText(id, &st) != id || len(st.found) > 0 {
		return false
	}
	for _, v := range t.found {
		if id == v || len(v) >= minGlobalLen && strings.Contains(id, v) {
			return false
		}
	}
	return true
}
