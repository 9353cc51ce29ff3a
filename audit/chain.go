package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// formatVersion is the "v" member of the canonical encoding. It changes only if the
// encoding itself changes; verifiers must refuse versions they do not know.
const formatVersion = 1

// genesisHash is the PrevHash of the first record.
const genesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// text is what the canonical encoder accepts: strings from the writer, raw column bytes
// from the verifier.
type text interface{ ~string | ~[]byte }

// canonicalFields are the parts of a record the hash covers, each already in its stored
// form: input, detail, reasons and execution are canonical JSON text (RFC 8785), or
// empty for null.
type canonicalFields[T text] struct {
	seq        int64
	id         T
	timeNS     int64
	kind       T
	principal  T
	role       T
	requestID  T
	decisionID T
	input      T
	decision   T
	reasons    T // canonical JSON array; empty means []
	revision   T
	execution  T // canonical JSON object, or empty for null
	detail     T
}

// appendCanonicalRecord appends the canonical encoding of a record (doc.go, "Canonical
// encoding"): one RFC 8785 JSON object whose members are written here in their sorted
// order. TestCanonicalKeyOrder proves the order is the RFC 8785 one.
func appendCanonicalRecord[T text](dst []byte, f *canonicalFields[T]) []byte {
	dst = append(dst, `{"decision":`...)
	dst = appendString(dst, f.decision)
	dst = append(dst, `,"decision_id":`...)
	dst = appendString(dst, f.decisionID)
	dst = append(dst, `,"detail":`...)
	dst = appendRawOrNull(dst, f.detail)
	dst = append(dst, `,"execution":`...)
	dst = appendRawOrNull(dst, f.execution)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, f.id)
	dst = append(dst, `,"input":`...)
	dst = appendRawOrNull(dst, f.input)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, f.kind)
	dst = append(dst, `,"principal":{"name":`...)
	dst = appendString(dst, f.principal)
	dst = append(dst, `,"role":`...)
	dst = appendString(dst, f.role)
	dst = append(dst, `},"reasons":`...)
	if len(f.reasons) == 0 {
		dst = append(dst, "[]"...)
	} else {
		dst = append(dst, f.reasons...)
	}
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, f.requestID)
	dst = append(dst, `,"revision":`...)
	dst = appendString(dst, f.revision)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, f.seq, 10)
	dst = append(dst, `,"time":`...)
	dst = appendString(dst, formatTime(f.timeNS))
	dst = append(dst, `,"v":`...)
	dst = strconv.AppendInt(dst, formatVersion, 10)
	return append(dst, '}')
}

func appendRawOrNull[T text](dst []byte, raw T) []byte {
	if len(raw) == 0 {
		return append(dst, "null"...)
	}
	return append(dst, raw...)
}

// chainHash returns hex(SHA-256(prevHash || "\n" || canonical)). buf is scratch space,
// returned grown for reuse.
func chainHash[T text](buf []byte, prevHash T, f *canonicalFields[T]) (string, []byte) {
	sum, buf := chainSum(buf, prevHash, f)
	return hex.EncodeToString(sum[:]), buf
}

// chainSum is chainHash without the hex encoding.
func chainSum[T text](buf []byte, prevHash T, f *canonicalFields[T]) ([sha256.Size]byte, []byte) {
	buf = append(buf[:0], prevHash...)
	buf = append(buf, '\n')
	buf = appendCanonicalRecord(buf, f)
	return sha256.Sum256(buf), buf
}

// appendCanonicalReasons encodes reasons as the canonical JSON array stored in the
// reasons column: members command, message, rule in that (sorted) order.
func appendCanonicalReasons(dst []byte, rs []Reason) []byte {
	dst = append(dst, '[')
	for i, r := range rs {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"command":`...)
		if r.Command == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendInt(dst, int64(*r.Command), 10)
		}
		dst = append(dst, `,"message":`...)
		dst = appendString(dst, r.Message)
		dst = append(dst, `,"rule":`...)
		dst = appendString(dst, r.Rule)
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// appendCanonicalExecution encodes an execution summary as the canonical JSON object
// stored in the execution column, or nothing for nil.
func appendCanonicalExecution(dst []byte, e *Execution) []byte {
	if e == nil {
		return dst
	}
	dst = append(dst, `{"duration_ms":`...)
	dst = strconv.AppendInt(dst, e.DurationMS, 10)
	dst = append(dst, `,"error":`...)
	dst = appendString(dst, e.Error)
	dst = append(dst, `,"exit_code":`...)
	dst = strconv.AppendInt(dst, int64(e.ExitCode), 10)
	dst = append(dst, `,"stderr_bytes":`...)
	dst = strconv.AppendInt(dst, e.StderrBytes, 10)
	dst = append(dst, `,"stderr_truncated":`...)
	dst = strconv.AppendBool(dst, e.StderrTruncated)
	dst = append(dst, `,"stdout_bytes":`...)
	dst = strconv.AppendInt(dst, e.StdoutBytes, 10)
	dst = append(dst, `,"stdout_truncated":`...)
	dst = strconv.AppendBool(dst, e.StdoutTruncated)
	dst = append(dst, `,"timed_out":`...)
	dst = strconv.AppendBool(dst, e.TimedOut)
	return append(dst, '}')
}
