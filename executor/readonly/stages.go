package readonly

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
)

// Run evaluates the pipeline on the file's content and returns the whole output. The
// error is *Error: io_error when reading fails or ctx ends (ctx is checked between
// blocks of lines, so a cancelled Run returns within microseconds), file_too_large when
// the file grew past MaxFileSize since Open, and the errors of Parse for a Pipeline
// built by hand with stages outside the language.
//
// Run reads the file from its start whatever was read before, without moving the
// file's offset: one File can be Run several times, concurrently too. The output may
// share memory with nothing else; the caller owns it.
func Run(ctx context.Context, p *Pipeline, f *File) ([]byte, error) {
	out, err := run(ctx, p, f)
	if err != nil {
		return nil, err
	}
	return out, nil
}

func run(ctx context.Context, p *Pipeline, f *File) ([]byte, *Error) {
	if p == nil || f == nil || f.f == nil {
		return nil, errorf(CodeIO, "no pipeline or no open file")
	}
	// A Pipeline's fields are exported: what Parse checked is checked again.
	if len(p.Stages) > MaxStages {
		return nil, errorf(CodeTooManyStages, "%d filters, at most %d", len(p.Stages), MaxStages)
	}
	ops := make([]op, len(p.Stages))
	for i, s := range p.Stages {
		_, o, files, err := compile(s.Name, s.Args)
		if err != nil {
			return nil, err
		}
		if len(files) > 0 {
			return nil, errorf(CodeUnsupported, "%s: a FILE operand (%q) is only allowed in the first stage", s.Name, files[0])
		}
		ops[i] = o
	}
	data, err := f.read(ctx)
	if err != nil {
		return nil, err
	}
	return eval(ctx, ops, data)
}

// eval runs the filters over data, a file's whole content.
//
// The filters form a push chain: the source hands each line of data to the first
// filter, which hands what it outputs to the next, and so on to the collector. A line
// is a sub-slice of data (or of a filter's arena) including its '\n' (the last line
// may have none); lines are never modified once handed on, so filters that keep them
// (sort, tail) need no copies. A filter that wants no more input (head, sed … p past
// its range) returns false, which stops everything upstream: the file is not scanned
// further. Memory is thus the file's buffer plus what the filters create: the numbered
// lines of nl and grep -n, sort's and tail's line lists, and the output.
func eval(ctx context.Context, ops []op, data []byte) ([]byte, *Error) {
	if len(ops) == 0 {
		return data, nil // cat FILE: the buffer is the output
	}
	st := &state{ctx: ctx}
	out := &collector{st: st}
	var next sink = out
	for i := len(ops) - 1; i >= 0; i-- {
		next = newFilter(ops[i], next, st)
	}
	if g, ok := next.(*grep); ok {
		g.scan(data)
	} else {
		for len(data) > 0 && !st.cancelled() {
			i := bytes.IndexByte(data, '\n') + 1
			if i == 0 {
				i = len(data)
			}
			if !next.line(data[:i:i]) {
				break
			}
			data = data[i:]
		}
		next.end()
	}
	if errors.Is(st.err, errOutputTooLarge) {
		return nil, errorf(CodeOutputTooLarge, "the pipeline makes more than %d MiB of output", MaxOutput>>20)
	}
	if st.err != nil {
		return nil, errorf(CodeIO, "%v", st.err)
	}
	return out.out, nil
}

// state is what the filters of one evaluation share: its context, and the bytes their
// arenas and the output took.
type state struct {
	ctx   context.Context
	ticks int
	err   error
	made  int
}

// grew counts n more bytes made by the evaluation; past MaxOutput it fails: the
// filters stop at their next check of cancelled.
func (s *state) grew(n int) {
	if s.made += n; s.made > MaxOutput && s.err == nil {
		s.err = errOutputTooLarge
	}
}

// cancelled reports whether ctx has ended, asking it only every 1024 calls: a
// context's Err takes a lock.
func (s *state) cancelled() bool {
	if s.ticks++; s.ticks&1023 == 0 && s.err == nil {
		s.err = s.ctx.Err()
	}
	return s.err != nil
}

// sink receives lines.
type sink interface {
	// line takes one line; false means that no more lines are wanted.
	line(l []byte) bool
	// end says that no more lines come (called once, also after line returned false).
	end()
}

func newFilter(o op, next sink, st *state) sink {
	switch o.kind {
	case opNL:
		return &nl{next: next, arena: arena{st: st}}
	case opHead:
		return &head{n: o.n, next: next}
	case opTail:
		return &tail{n: o.n, next: next, st: st}
	case opWCLines, opWCBytes:
		return &wc{bytes: o.kind == opWCBytes, next: next}
	case opSort:
		return &sorter{reverse: o.flag, next: next, st: st, arena: arena{st: st}}
	case opGrep:
		return &grep{pattern: o.pattern, numbered: o.flag, next: next, st: st, arena: arena{st: st}}
	case opSedPrint:
		return &sedPrint{n: o.n, m: o.m, next: next}
	case opSedDelete:
		return &sedDelete{n: o.n, m: o.m, next: next}
	}
	panic("readonly: unknown filter") // compile returns only the kinds above
}

// content is l without its '\n'.
func content(l []byte) []byte {
	if n := len(l); n > 0 && l[n-1] == '\n' {
		return l[:n-1]
	}
	return l
}

// arena allocates the lines a filter creates in chunks that are never reallocated, so
// that lines handed on stay valid and a line costs no allocation of its own. The
// chunks of every arena of an evaluation count against MaxOutput (st), so stacked
// filters that each add to every line (nl | nl | …) cannot grow memory without bound.
type arena struct {
	buf []byte
	st  *state
}

// line returns a new line made of prefix, c and a '\n'.
func (a *arena) line(prefix, c []byte) []byte {
	n := len(prefix) + len(c) + 1
	if cap(a.buf)-len(a.buf) < n {
		// Chunks double from 4 KiB up to 256 KiB: small outputs stay small, large
		// ones waste at most a chunk's tail each.
		a.buf = make([]byte, 0, max(n, min(2*cap(a.buf), 256<<10), 4<<10))
		a.st.grew(cap(a.buf))
	}
	start := len(a.buf)
	a.buf = append(append(append(a.buf, prefix...), c...), '\n')
	return a.buf[start:len(a.buf):len(a.buf)]
}

// collector is the end of the chain: it gathers the output, counting its growth
// against MaxOutput.
type collector struct {
	out []byte
	st  *state
}

func (c *collector) line(l []byte) bool {
	before := cap(c.out)
	c.out = append(c.out, l...)
	if cap(c.out) != before {
		c.st.grew(cap(c.out) - before)
	}
	return !c.st.cancelled()
}
func (c *collector) end() {}

// nl numbers every line, empty ones included, as "%6d\t" (GNU nl -ba -w6 -s '\t'
// without its section delimiters); like GNU nl it ends the last line with '\n'.
type nl struct {
	num   int
	arena arena
	tmp   [32]byte
	next  sink
}

func (f *nl) line(l []byte) bool {
	f.num++
	prefix := strconv.AppendInt(f.tmp[:0], int64(f.num), 10)
	if pad := 6 - len(prefix); pad > 0 {
		prefix = append(f.tmp[:0], "      "[:pad]...)
		prefix = strconv.AppendInt(prefix, int64(f.num), 10)
	}
	return f.next.line(f.arena.line(append(prefix, '\t'), content(l)))
}

func (f *nl) end() { f.next.end() }

// head passes the first n lines.
type head struct {
	n, seen int
	next    sink
}

func (f *head) line(l []byte) bool {
	if f.seen >= f.n {
		return false
	}
	f.seen++
	return f.next.line(l) && f.seen < f.n
}

func (f *head) end() { f.next.end() }

// tail passes the last n lines, kept in a ring.
type tail struct {
	n    int
	ring [][]byte
	pos  int // the oldest line once the ring is full
	next sink
	st   *state
}

func (f *tail) line(l []byte) bool {
	if f.n == 0 {
		return false
	}
	if len(f.ring) < f.n {
		f.ring = append(f.ring, l)
	} else {
		f.ring[f.pos] = l
		f.pos = (f.pos + 1) % f.n
	}
	return true
}

func (f *tail) end() {
	if emit(f.ring[f.pos:], f.next, f.st) {
		emit(f.ring[:f.pos], f.next, f.st)
	}
	f.next.end()
}

// emit hands lines to next; false when next wants no more or the run is cancelled.
func emit(lines [][]byte, next sink, st *state) bool {
	for _, l := range lines {
		if st.cancelled() || !next.line(l) {
			return false
		}
	}
	return true
}

// wc counts '\n' bytes (-l) or bytes (-c) and outputs the number and a '\n'.
type wc struct {
	bytes bool
	n     int
	next  sink
}

func (f *wc) line(l []byte) bool {
	if f.bytes {
		f.n += len(l)
	} else if len(l) > 0 && l[len(l)-1] == '\n' {
		f.n++
	}
	return true
}

func (f *wc) end() {
	b := append(strconv.AppendInt(nil, int64(f.n), 10), '\n')
	f.next.line(b[:len(b):len(b)])
	f.next.end()
}

// sorter sorts the lines bytewise (LC_ALL=C sort, [-r]); every output line ends with
// '\n'.
type sorter struct {
	reverse bool
	lines   [][]byte
	arena   arena
	next    sink
	st      *state
}

func (f *sorter) line(l []byte) bool { f.lines = append(f.lines, l); return true }

func (f *sorter) end() {
	if f.reverse {
		slices.SortFunc(f.lines, func(a, b []byte) int { return bytes.Compare(content(b), content(a)) })
	} else {
		slices.SortFunc(f.lines, func(a, b []byte) int { return bytes.Compare(content(a), content(b)) })
	}
	for _, l := range f.lines {
		if len(l) == 0 || l[len(l)-1] != '\n' {
			l = f.arena.line(nil, l)
		}
		if f.st.cancelled() || !f.next.line(l) {
			break
		}
	}
	f.next.end()
}

// grep passes the lines that contain pattern, a fixed string ("" is in every line),
// [-n: prefixed with their number and ':']; like GNU grep it ends the last line with
// '\n'.
type grep struct {
	pattern  []byte
	numbered bool
	num      int // lines seen
	arena    arena
	tmp      [32]byte
	next     sink
	st       *state
}

func (f *grep) line(l []byte) bool {
	f.num++
	if !bytes.Contains(content(l), f.pattern) {
		return true
	}
	return f.match(l)
}

func (f *grep) match(l []byte) bool {
	if !f.numbered && len(l) > 0 && l[len(l)-1] == '\n' {
		return f.next.line(l)
	}
	var prefix []byte
	if f.numbered {
		prefix = append(strconv.AppendInt(f.tmp[:0], int64(f.num), 10), ':')
	}
	return f.next.line(f.arena.line(prefix, content(l)))
}

func (f *grep) end() { f.next.end() }

// scan is the source and grep in one, when grep is the first filter: it searches the
// pattern in the whole buffer rather than line by line, and counts the lines it skips
// with one bytes.Count, which is several times faster on sparse matches.
func (f *grep) scan(data []byte) {
	if len(f.pattern) == 0 || bytes.IndexByte(f.pattern, '\n') >= 0 {
		// Every line matches, or none can: the line-by-line loop is as good.
		for len(data) > 0 && !f.st.cancelled() {
			i := bytes.IndexByte(data, '\n') + 1
			if i == 0 {
				i = len(data)
			}
			if !f.line(data[:i:i]) {
				break
			}
			data = data[i:]
		}
		f.end()
		return
	}
	for len(data) > 0 && !f.st.cancelled() {
		i := bytes.Index(data, f.pattern)
		if i < 0 {
			break
		}
		start := bytes.LastIndexByte(data[:i], '\n') + 1
		end := bytes.IndexByte(data[i+len(f.pattern):], '\n')
		if end < 0 {
			end = len(data)
		} else {
			end += i + len(f.pattern) + 1
		}
		if f.numbered {
			f.num += bytes.Count(data[:start], []byte{'\n'}) + 1
		}
		if !f.match(data[start:end:end]) {
			break
		}
		data = data[end:]
	}
	f.end()
}

// sedPrint passes lines n..m (sed -n 'n,mp').
type sedPrint struct {
	n, m, num int
	next      sink
}

func (f *sedPrint) line(l []byte) bool {
	f.num++
	if f.num < f.n {
		return true
	}
	return f.next.line(l) && f.num < f.m
}

func (f *sedPrint) end() { f.next.end() }

// sedDelete passes the lines outside n..m. This is seed document 004's meaning of
// `sed -n 'n,md'`; GNU sed -n with a d command prints nothing at all.
type sedDelete struct {
	n, m, num int
	next      sink
}

func (f *sedDelete) line(l []byte) bool {
	f.num++
	if f.n <= f.num && f.num <= f.m {
		return true
	}
	return f.next.line(l)
}

func (f *sedDelete) end() { f.next.end() }
