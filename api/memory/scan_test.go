package memory

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/uuid"
)

// scanCases are values scanValue must judge as json.Valid and utf8.Valid do together: every
// token, whitespace in every place, every escape, HTML characters raw and escaped, invalid
// UTF-8 inside and outside strings, and the grammar's near misses.
var scanCases = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1.5e+10`, `1E-2`, `0.0`, `""`, `"a"`, `[]`, `{}`,
	`[1,2,3]`, `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, ` [ 1 , { "a" : [ ] } ] `, "[\t1\r\n]",
	`"\" \\ \/ \b \f \n \r \t \u00e9 \uD800 \u002F"`, `"<&>"`, `"\u003c"`, "\"\u2028\u2029\"", `"é漢字😀"`,
	`[[[[[[[[[[]]]]]]]]]]`, `{"a":{"b":{"c":{}}}}`, `{"":""}`, `[""]`, `{"a":"}"}`, `["]"]`,
	// Invalid.
	``, ` `, `nul`, `nulll`, `tru`, `fals`, `01`, `-`, `1.`, `.1`, `1e`, `1e+`, `+1`, `0x10`, `1_0`, `NaN`,
	`"`, `"abc`, `"\x"`, `"\u12"`, `"\u12G4"`, "\"\x01\"", "\"\x7f\"", "\"\xff\"", "\"\xed\xa0\x80\"", "\xff",
	`[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `{`, `}`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{1:2}`,
	`{"a" 1}`, `{"a":1 "b":2}`, `[}`, `{]`, `{"a":[}`, `[1]]`, `1 2`, `[] []`, `"a" "b"`, "[1,\x00]",
}

// checkScan fails t unless scanValue, from the first non-space byte of data, accepts exactly
// when json.Valid and utf8.Valid do (or declines a value nested beyond maxScanDepth), and
// reports the value's depth and whether json.Compact and json.HTMLEscape would change it.
func checkScan(t *testing.T, data []byte) {
	t.Helper()
	start := skipWS(data, 0)
	end, depth, flags, ok := scanValue(data, start)
	accepted := ok && skipWS(data, end) == len(data)
	valid := json.Valid(data) && utf8.Valid(data)
	if accepted != valid && (accepted || JSONDepth(data) <= maxScanDepth) {
		t.Fatalf("%q: scanValue accepted %v, json.Valid and utf8.Valid say %v", data, accepted, valid)
	}
	if !ok {
		return
	}
	value := data[start:end]
	if !json.Valid(value) || !utf8.Valid(value) {
		t.Fatalf("%q: scanValue accepted %q, which is not valid", data, value)
	}
	if depth != JSONDepth(value) {
		t.Fatalf("%q: depth %d, JSONDepth %d", value, depth, JSONDepth(value))
	}
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, value); err != nil {
		t.Fatal(err)
	}
	if got := flags&flagSpace != 0; got != !bytes.Equal(compact.Bytes(), value) {
		t.Fatalf("%q: flagSpace %v, but json.Compact gives %q", value, got, compact.Bytes())
	}
	json.HTMLEscape(&escaped, value)
	if got := flags&flagHTML != 0; got != !bytes.Equal(escaped.Bytes(), value) {
		t.Fatalf("%q: flagHTML %v, but json.HTMLEscape gives %q", value, got, escaped.Bytes())
	}
}

func TestScanValueAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range scanCases {
		checkScan(t, []byte(in))
	}
	// The depth bound: maxScanDepth levels are followed, one more is left to encoding/json.
	deep := func(n int) []byte { return []byte(strings.Repeat("[", n) + strings.Repeat("]", n)) }
	if end, depth, _, ok := scanValue(deep(maxScanDepth), 0); !ok || end != 2*maxScanDepth || depth != maxScanDepth {
		t.Fatalf("%d levels: end %d, depth %d, ok %v", maxScanDepth, end, depth, ok)
	}
	if _, _, _, ok := scanValue(deep(maxScanDepth+1), 0); ok {
		t.Fatalf("%d levels accepted", maxScanDepth+1)
	}
	checkScan(t, deep(maxScanDepth+1))
	// A value followed by more text ends where the value ends.
	if end, _, _, ok := scanValue([]byte(`{"a":[1]},2`), 0); !ok || end != 9 {
		t.Fatalf("end %d, ok %v", end, ok)
	}
}

// checkAppendRaw fails t unless appendRaw writes what json.Compact writes for v and judges v
// as json.Compact, utf8.Valid and json.HTMLEscape do: the encoder's one pass must not change
// a byte of the wire.
func checkAppendRaw(t *testing.T, v []byte) {
	t.Helper()
	var got, want, escaped bytes.Buffer
	got.WriteString("x") // appendRaw appends
	html, valid, utf := appendRaw(&got, v)
	err := json.Compact(&want, v)
	if wantValid := err == nil && len(v) > 0; valid != wantValid {
		t.Fatalf("%q: appendRaw says valid %v, json.Compact %v", v, valid, err)
	}
	if !valid {
		return
	}
	if got.String() != "x"+want.String() {
		t.Fatalf("%q: appendRaw wrote %q, json.Compact %q", v, got.Bytes()[1:], want.Bytes())
	}
	if utf != utf8.Valid(v) {
		t.Fatalf("%q: appendRaw says UTF-8 %v", v, utf)
	}
	// No false negative ever; for a value the one pass copies (compact, valid UTF-8), no
	// false positive either.
	json.HTMLEscape(&escaped, want.Bytes())
	changes := !bytes.Equal(escaped.Bytes(), want.Bytes())
	if html != changes && (!html || bytes.Equal(want.Bytes(), v) && utf) {
		t.Fatalf("%q: appendRaw says HTML %v, json.HTMLEscape gives %q", v, html, escaped.Bytes())
	}
}

func TestAppendRawIsJSONCompact(t *testing.T) {
	for _, in := range scanCases {
		checkAppendRaw(t, []byte(in))
		checkAppendRaw(t, []byte(" "+in+"\n"))
	}
}

// TestAppendIDIsUUIDString: the encoders' ids are uuid's own spelling.
func TestAppendIDIsUUIDString(t *testing.T) {
	for range 100 {
		id := uuid.New()
		if got := AppendID([]byte("x"), id); string(got) != "x"+id.String() {
			t.Fatalf("AppendID gave %s, want %s", got, id)
		}
	}
}

// FuzzScanValue holds scanValue to json.Valid, utf8.Valid, json.Compact, json.HTMLEscape and
// JSONDepth on any input.
func FuzzScanValue(f *testing.F) {
	for _, s := range scanCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkScan(t, data)
		checkAppendRaw(t, data)
	})
}
