package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// The functions below re-implement the documented canonical encoding (doc.go) from
// the export format alone, without using the package's encoder, the way an auditor's own
// tool would.

// indepCanonical encodes a decoded JSON value per RFC 8785.
func indepCanonical(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			panic(err)
		}
		b.WriteString(indepNumber(f))
	case string:
		b.WriteByte('"')
		for _, r := range v {
			switch {
			case r == '"':
				b.WriteString(`\"`)
			case r == '\\':
				b.WriteString(`\\`)
			case r == '\b':
				b.WriteString(`\b`)
			case r == '\f':
				b.WriteString(`\f`)
			case r == '\n':
				b.WriteString(`\n`)
			case r == '\r':
				b.WriteString(`\r`)
			case r == '\t':
				b.WriteString(`\t`)
			case r < 0x20:
				fmt.Fprintf(b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			indepCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool {
			a, c := utf16.Encode([]rune(keys[i])), utf16.Encode([]rune(keys[j]))
			for k := 0; k < len(a) && k < len(c); k++ {
				if a[k] != c[k] {
					return a[k] < c[k]
				}
			}
			return len(a) < len(c)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			indepCanonical(b, k)
			b.WriteByte(':')
			indepCanonical(b, v[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("unexpected %T", v))
	}
}

// indepNumber is ECMAScript's Number to String, written differently from formatNumber.
func indepNumber(f float64) string {
	if f == 0 {
		return "0"
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1.5e-07, 1e+21
	mant, exp, _ := strings.Cut(s, "e")
	sign, digits := exp[:1], strings.TrimLeft(exp[1:], "0")
	return mant + "e" + sign + digits
}

// indepVerify checks export lines: each hash over the previous hash and the canonical
// record rebuilt from the line, each prev_hash equal to the hash before it.
func indepVerify(t *testing.T, export []byte) int {
	t.Helper()
	prev := strings.Repeat("0", 64)
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, 16<<20)
	n := 0
	for sc.Scan() {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		var line map[string]any
		if err := dec.Decode(&line); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		str := func(k string) string {
			s, _ := line[k].(string)
			return s
		}
		rec := map[string]any{
			"v": json.Number("1"), "seq": line["seq"], "id": line["id"], "time": line["timestamp"],
			"kind": line["kind"], "principal": line["principal"], "request_id": str("request_id"),
			"decision_id": str("decision_id"), "input": line["input"], "decision": "",
			"reasons": []any{}, "revision": "", "execution": line["execution"], "detail": line["detail"],
		}
		if line["kind"] == "decision" {
			rec["decision_id"] = ""
		}
		if r, ok := line["result"].(map[string]any); ok {
			rec["decision"], rec["reasons"] = r["action"], r["reasons"]
		}
		if b, ok := line["bundles"].(map[string]any); ok {
			rec["revision"] = b["cmdgate"].(map[string]any)["revision"]
		}
		var c strings.Builder
		indepCanonical(&c, rec)
		sum := sha256.Sum256([]byte(prev + "\n" + c.String()))
		if got := hex.EncodeToString(sum[:]); got != str("hash") || str("prev_hash") != prev {
			t.Fatalf("line %d (seq %v): computed hash %s prev %s, line says hash %s prev %s\ncanonical: %s", n+1, line["seq"], got, prev, str("hash"), str("prev_hash"), c.String())
		}
		prev = str("hash")
		n++
	}
	return n
}

func TestIndependentVerificationOfExport(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t, t.TempDir(), Options{})
	defer s.Close(ctx)
	cmd := 1
	records := []Record{
		sampleDecision(0), sampleDecision(1), sampleDecision(2),
		{Kind: KindDecision, Principal: Principal{"ünïcödé 🔑", "agent"}, RequestID: "r-2",
			Input:    json.RawMessage(`{"z":1,"a":[1.5,1e-7,1e21,-0,123456789012345678901234],"\ue000":"bmp-private","😀":"astral","ctl":"a\u0001b\tc\u007f","html":"<&>","quote":"\"\\"}`),
			Decision: "deny", Reasons: []Reason{{Rule: "r.one", Message: "m1", Command: &cmd}, {Rule: "r.two", Message: "line1\nline2"}}, Revision: "rev-9"},
		{Kind: KindExecution, Principal: Principal{"a", "agent"}, RequestID: "r-2", DecisionID: "01J00000000000000000000000",
			Execution: &Execution{ExitCode: 124, DurationMS: 30001, TimedOut: true, StdoutTruncated: true, StdoutBytes: 200000, StderrBytes: 3, Error: "timed out"}},
		{Kind: KindApproval, Principal: Principal{"boss", "approver"}, DecisionID: "01J00000000000000000000000", Decision: "approve", Detail: json.RawMessage(`{"comment":"ok"}`)},
		{Kind: KindPolicyLoad, Revision: "rev-10", Detail: json.RawMessage(`{"files":3}`)},
		{Kind: KindAuthFailure, Detail: json.RawMessage(`{"remote":"127.0.0.1:5555","reason":"unknown token"}`)},
	}
	for _, r := range records {
		if _, err := s.Append(ctx, r); err != nil {
			t.Fatalf("Append(%s) = %v", r.Kind, err)
		}
	}
	var out bytes.Buffer
	n, err := s.Export(ctx, &out, Query{})
	if err != nil || n != int64(len(records)) {
		t.Fatalf("Export() = %d, %v; want %d lines", n, err, len(records))
	}
	if got := indepVerify(t, out.Bytes()); got != len(records) {
		t.Errorf("independently verified %d lines, want %d", got, len(records))
	}
}

func TestCanonicalKeyOrder(t *testing.T) {
	t.Parallel()
	// The hand-written encoders must emit members in RFC 8785 order: re-canonicalizing
	// their output (which sorts) must not change it.
	cmd := 3
	f := canonicalFields[string]{seq: 7, id: "01J", timeNS: 1, kind: "decision", principal: "p", role: "r",
		requestID: "q", decisionID: "d", input: `{"a":1}`, decision: "deny",
		reasons:  string(appendCanonicalReasons(nil, []Reason{{Rule: "x", Message: "y", Command: &cmd}, {Rule: "z"}})),
		revision: "v", execution: string(appendCanonicalExecution(nil, &Execution{ExitCode: 1, Error: "e"})), detail: `{"b":2}`}
	for _, enc := range [][]byte{appendCanonicalRecord(nil, &f), []byte(f.reasons), []byte(f.execution)} {
		v, err := parseJSON(enc, maxJSONDepth)
		if err != nil {
			t.Fatalf("parseJSON(%s) = %v", enc, err)
		}
		if again := appendCanonical(nil, &v); !bytes.Equal(again, enc) {
			t.Errorf("encoding is not canonical:\n got %s\nwant %s", enc, again)
		}
	}
}

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	// Examples from RFC 8785 appendix B and ECMAScript.
	for in, want := range map[string]string{
		"0": "0", "-0": "0", "1": "1", "-1": "-1", "4.50": "4.5", "2e-3": "0.002", "0.000001": "0.000001",
		"1e-7": "1e-7", "1e21": "1e+21", "1e20": "100000000000000000000", "333333333.33333329": "333333333.3333333",
		"1E30": "1e+30", "9007199254740992": "9007199254740992", "5e-324": "5e-324",
		"1.7976931348623157e308": "1.7976931348623157e+308", "0.1": "0.1", "123456789012345678901234": "1.2345678901234569e+23",
		"-1.5e-9": "-1.5e-9", "295147905179352830000": "295147905179352830000",
	} {
		f, err := strconv.ParseFloat(in, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := formatNumber(f); got != want {
			t.Errorf("formatNumber(%s) = %s, want %s", in, got, want)
		}
		if got := indepNumber(f); got != want {
			t.Errorf("indepNumber(%s) = %s, want %s (test helper)", in, got, want)
		}
	}
}

func TestIDs(t *testing.T) {
	t.Parallel()
	var prev id128
	var prevText string
	for i := range 2000 {
		ms := uint64(1_700_000_000_000 + i/100) // many ids per millisecond
		id := nextID(prev, ms)
		if !prev.less(id) {
			t.Fatalf("nextID(%v, %d) = %v, not after", prev, ms, id)
		}
		text := id.String()
		if text <= prevText {
			t.Fatalf("id %s does not sort after %s", text, prevText)
		}
		back, err := parseID(text)
		if err != nil || back != id {
			t.Fatalf("parseID(%s) = %v, %v; want %v", text, back, err, id)
		}
		if id.ms() < ms {
			t.Fatalf("id time %d before %d", id.ms(), ms)
		}
		prev, prevText = id, text
	}
	// A stalled or backward clock keeps ids increasing.
	if id := nextID(prev, prev.ms()-5); !prev.less(id) {
		t.Errorf("nextID with an earlier clock = %v, not after %v", id, prev)
	}
	for _, bad := range []string{"", "01J", "8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "01j0000000000000000000000U", "01J0000000000000000000000!"} {
		if _, err := parseID(bad); err == nil {
			t.Errorf("parseID(%q) = nil error", bad)
		}
	}
}
