package gateway

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/cmdgate/cmdgate/audit"
	"github.com/cmdgate/cmdgate/parse"
)

// An agent sends the same few commands over and over (git status, go test ./...), and
// everything the gateway derives from a request before deciding it is a function of
// what the request says and who sends it: the parse, the policy input, its JSON. The
// gateway remembers these by the request's shape, the SHA-256 of all they depend on,
// and the same digest is the engine's decision cache key (policies.DecideKeyed): a
// repeated command is neither parsed, nor encoded, nor evaluated again, and its audit
// record's input is prepared from a template (audit.InputTemplate). The record is still
// appended, durably, before the answer.

// maxParsedDocs bounds how many documents are remembered, whatever the decision
// cache's size, and maxParsedBytes the memory they take (about: a few KB each for
// everyday commands).
const (
	maxParsedDocs  = 2048
	maxParsedBytes = 32 << 20
)

// maxShapeBytes is the largest script (or argv, all its words) whose parse is kept:
// everyday commands are far shorter, and a few huge scripts must not fill memory.
const maxShapeBytes = 4 << 10

// parsedDoc is one remembered request: its document (Request.ID empty) and the JSON
// parts that do not change from one request of the shape to the next. It is read-only
// once built.
type parsedDoc struct {
	doc      parse.Document
	key      [sha256.Size]byte
	commands json.RawMessage // doc.Commands, for the answer
	// input is the document's JSON without its principal and request, which lead it:
	// `,"commands":…,"assignments":…,"features":…,"error":…,"sandbox":…}`. (The
	// sandbox is the server's, the same for every request: the shape need not hold it.)
	input []byte
	// tmpl is the input prepared for the audit store, nil when the store cannot take
	// it as a template (then appendInput gives each record its input).
	tmpl *audit.InputTemplate
}

// parseRequest returns the document of a request (its Request.ID still empty): a copy
// of the remembered one for its shape, or a new parse, remembered for the next
// request of the shape. memo is nil when the request is not remembered (too large, or
// the decision cache is off).
func (s *Server) parseRequest(req *Request, popts parse.Options, principal parse.Principal, sandbox parse.Sandbox) (doc *parse.Document, memo *parsedDoc) {
	var key [sha256.Size]byte
	ok := s.parsed != nil
	if ok {
		key, ok = shape(req, popts, principal, s.opts.Policy.Profile)
	}
	if ok {
		if p, hit := s.parsed.get(key); hit {
			d := p.doc // the remembered document stays as it is
			return &d, p
		}
	}
	if req.Argv != nil {
		doc = parse.Argv(req.Argv, popts)
	} else {
		doc = parse.Script(req.Script, popts)
	}
	doc.Principal = principal
	doc.Request.Task = req.Task
	doc.Request.Profile = s.opts.Policy.Profile
	doc.Sandbox = sandbox
	if ok {
		if p, err := newParsedDoc(doc, key); err == nil {
			if in, err := p.appendInput(nil, doc.Principal, doc.Request); err == nil {
				p.tmpl, _ = s.store.PrepareInput(in)
			}
			s.parsed.add(key, p)
			d := p.doc
			return &d, p
		}
	}
	return doc, nil
}

// parsedDocs remembers the parsedDocs of recent shapes, the least recently used
// leaving first when there are too many or they take too much memory.
type parsedDocs struct {
	lru   *lru.Cache[[sha256.Size]byte, *parsedDoc]
	mu    sync.Mutex // over add, so that bytes follows the adds and their evictions
	bytes int        // the size of what is remembered
}

func newParsedDocs(size int) *parsedDocs {
	if size <= 0 {
		return nil
	}
	p := &parsedDocs{}
	c, err := lru.NewWithEvict(size, func(_ [sha256.Size]byte, d *parsedDoc) { p.bytes -= d.size() })
	if err != nil {
		panic(err) // only a size below 1 fails
	}
	p.lru = c
	return p
}

func (p *parsedDocs) get(k [sha256.Size]byte) (*parsedDoc, bool) { return p.lru.Get(k) }

func (p *parsedDocs) add(k [sha256.Size]byte, d *parsedDoc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lru.Contains(k) {
		return // another request of the shape was first
	}
	p.bytes += d.size()
	p.lru.Add(k, d)
	for p.bytes > maxParsedBytes && p.lru.Len() > 1 {
		p.lru.RemoveOldest()
	}
}

// size is about the memory d holds: its JSON parts, the template (two encodings and the
// words of the input) and the document itself (about as large as its JSON).
func (d *parsedDoc) size() int {
	return len(d.commands) + 5*len(d.input) + 512
}

// shape is the digest of everything a request's document depends on: the request, the
// parse options (the resolved cwd among them) and what the server adds (principal,
// profile); ok is false for a request too large to remember.
func shape(req *Request, popts parse.Options, principal parse.Principal, profile string) (key [sha256.Size]byte, ok bool) {
	n := len(req.Script)
	for _, a := range req.Argv {
		n += len(a)
	}
	if n > maxShapeBytes {
		return key, false
	}
	h := sha256.New()
	source := "script"
	if req.Argv != nil {
		source = "argv"
	}
	for _, s := range []string{source, req.Script, popts.ShellMode, popts.Cwd, popts.Workspace, principal.Name, principal.Role, profile, req.Task} {
		writeField(h, s)
	}
	binary.Write(h, binary.BigEndian, uint64(popts.MaxBytes))
	binary.Write(h, binary.BigEndian, uint32(len(req.Argv)))
	for _, a := range req.Argv {
		writeField(h, a)
	}
	h.Sum(key[:0])
	return key, true
}

// writeField writes s length-prefixed, so that no two sequences of fields write the
// same bytes.
func writeField(h hash.Hash, s string) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
}

// newParsedDoc encodes the parts of a document that stay the same for its shape.
// doc.Request.ID must be empty.
func newParsedDoc(doc *parse.Document, key [sha256.Size]byte) (*parsedDoc, error) {
	commands, err := json.Marshal(doc.Commands)
	if err != nil {
		return nil, err
	}
	rest, err := json.Marshal(struct {
		Commands    json.RawMessage    `json:"commands"`
		Assignments []parse.Assignment `json:"assignments"`
		Evaluations []parse.Evaluation `json:"evaluations"`
		Features    parse.Features     `json:"features"`
		Error       *parse.Error       `json:"error"`
		Sandbox     parse.Sandbox      `json:"sandbox"`
		Readonly    *parse.Readonly    `json:"readonly,omitempty"`
	}{commands, doc.Assignments, doc.Evaluations, doc.Features, doc.Error, doc.Sandbox, doc.Readonly})
	if err != nil {
		return nil, err
	}
	rest[0] = ',' // the principal and the request come first
	return &parsedDoc{doc: *doc, key: key, commands: commands, input: rest}, nil
}

// appendInput appends the JSON of the document with its principal and request (and
// so the request id): the same bytes as json.Marshal of the whole document
// (TestParsedDocInput).
func (p *parsedDoc) appendInput(dst []byte, principal parse.Principal, request parse.Request) ([]byte, error) {
	pb, err := json.Marshal(principal)
	if err != nil {
		return nil, err
	}
	rb, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	dst = append(dst, `{"principal":`...)
	dst = append(dst, pb...)
	dst = append(dst, `,"request":`...)
	dst = append(dst, rb...)
	return append(dst, p.input...), nil
}
