package memory

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// queryDecodeCases are queries the one-pass decoder must either decode exactly as
// encoding/json's path does or decline: the common shapes, whitespace, every null, and every
// way a key or value can be spelt that encoding/json reads differently or refuses.
var queryDecodeCases = []string{
	`{"text":null,"tags":["common"],"filters":null,"limit":20}`,
	`{"text":"w7 ","tags":null,"filters":{"source":"s3","n":{"a":[1,2]},"z":null},"limit":0}`,
	` { "text" : "x" , "tags" : [ "a" , "b" , "a" ] , "filters" : { } , "limit" : -1 } `,
	`{}`, `{"limit":1000000}`, `{"limit":-1000000}`, `{"limit":1000001}`, `{"limit":-0}`,
	`{"limit":1.0}`, `{"limit":1e2}`, `{"limit":"5"}`, `{"limit":null}`, `{"limit":01}`,
	`{"text":"\u00e9"}`, `{"text":"é<&>"}`, `{"text":"a\"b"}`, `{"text":1}`, `{"text":"\xff"}`,
	`{"tags":[]}`, `{"tags":[null]}`, `{"tags":["é"]}`, `{"tags":["\u0061"]}`, `{"tags":{}}`,
	`{"filters":[]}`, `{"filters":{"a":1,"a":2}}`, `{"filters":{"\u0061":1}}`, `{"filters":{"a":}}`,
	`{"TEXT":"x"}`, `{"Limit":3}`, `{"text":"x","text":"y"}`, `{"x":1}`, `{"limit":1,}`,
	`{"limit":1}x`, `{"limit":1} {}`, `[]`, `null`, `{`, ``, `{"tags":["a"],"filters":{"k":[[[[]]]]}}`,
}

// checkQueryOnePass fails t unless, on data, Query.UnmarshalJSON agrees with encoding/json's
// path (values by reflect.DeepEqual, errors by text), and the one pass accepts only valid JSON.
func checkQueryOnePass(t *testing.T, data []byte) {
	t.Helper()
	var want Query
	wantErr := want.unmarshalSlow(data)
	if got, ok := decodeQuery(data); ok {
		if !json.Valid(data) || wantErr != nil {
			t.Fatalf("%q: the one pass accepted what encoding/json refuses (%v)", data, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass gave\n%#v\nencoding/json\n%#v", data, got, want)
		}
	}
	var got Query
	if err := got.UnmarshalJSON(data); fmt.Sprint(err) != fmt.Sprint(wantErr) || (err == nil && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%q: UnmarshalJSON gave %v, encoding/json %v", data, err, wantErr)
	}
	var ref Query
	refErr := json.Unmarshal(data, &ref)
	if got, err := UnmarshalQuery(data); fmt.Sprint(err) != fmt.Sprint(refErr) || !reflect.DeepEqual(got, ref) {
		t.Fatalf("%q: UnmarshalQuery gave %#v, %v; json.Unmarshal %#v, %v", data, got, err, ref, refErr)
	}
}

// checkQueryEncode fails t unless Query.MarshalJSON writes json.Marshal's bytes for q.
func checkQueryEncode(t *testing.T, q Query) {
	t.Helper()
	want, wantErr := marshalQuerySlow(q)
	for _, v := range q.Filters {
		if !json.Valid(v) {
			want = nil
		}
	}
	got, err := q.MarshalJSON()
	if (err == nil) != (want != nil && wantErr == nil) || string(got) != string(want) {
		t.Fatalf("%#v: MarshalJSON gave %s (%v), json.Marshal %s (%v)", q, got, err, want, wantErr)
	}
}

func TestQueryOnePassAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range queryDecodeCases {
		checkQueryOnePass(t, []byte(in))
	}
	for _, in := range queryDecodeCases[:3] {
		if _, ok := decodeQuery([]byte(in)); !ok {
			t.Errorf("%s: the one pass declined a common shape", in)
		}
	}
	text, html := "w7 ", "<a & b>"
	for _, q := range []Query{
		{}, {Limit: 20, Tags: []string{"common"}}, {Text: &text, Tags: []string{}, Filters: map[string]json.RawMessage{}, Limit: -3},
		{Text: &html}, {Tags: []string{"é", "a\"b"}}, {Filters: map[string]json.RawMessage{"b": json.RawMessage(`"s3"`), "a": json.RawMessage(`{"x":[1,null]}`)}},
		{Filters: map[string]json.RawMessage{"a": json.RawMessage(` 1 `)}}, {Filters: map[string]json.RawMessage{"a": json.RawMessage(`"<"`)}},
		{Filters: map[string]json.RawMessage{"a": json.RawMessage(`nope`)}}, {Filters: map[string]json.RawMessage{"<": json.RawMessage(`1`)}},
		{Filters: map[string]json.RawMessage{strings.Repeat("k", 3): json.RawMessage(`1.50`)}, Limit: MaxWireLimit},
	} {
		checkQueryEncode(t, q)
	}
}

// FuzzQueryDecodeOnePass holds the query's one-pass decoder to encoding/json's path on any
// input, and its encoder to json.Marshal on whatever decodes.
func FuzzQueryDecodeOnePass(f *testing.F) {
	for _, s := range queryDecodeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkQueryOnePass(t, data)
		var q Query
		if q.UnmarshalJSON(data) == nil {
			checkQueryEncode(t, q)
		}
	})
}
