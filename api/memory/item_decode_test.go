package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// itemDecodeCases are shapes the one-pass item decoder must either decode exactly as
// encoding/json's path does or decline: the common shape, whitespace, escapes and brackets
// inside strings, every default, and every way a key can be spelt that encoding/json reads
// differently (case folding, escapes, duplicates).
var itemDecodeCases = []string{
	exactWire,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
	` { "id" : "6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e" , "created_at" : 1.5 , "tags" : [ "a" , "b" ] } `,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":null,"content":null,"tags":null}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{},"content":"","tags":[]}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"content":{"a]}\"":["}",{"[":"\\"}]},"metadata":{"k":" null","n":null,"x":[1,{"y":"]"}]}}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":-1.0000005e3,"content":"\u0000\ud800","tags":["\u00e9","<&>"]}`,
	`{"id":"6F1C0F6E-8A55-4C39-9A39-2A0B6F0D4B1E","created_at":1}`,
	`{"id":"\u0036f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1\"","created_at":1}`,
	`{"ID":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
	`{"i\u0064":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","id":"7f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"a":1,"a":2}}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"\u0061":1,"a\"b":2}}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":[]}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":"1"}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":null}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1e999}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"tags":[null]}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"extra":1}`,
	`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e"}`,
	`{"created_at":1}`, `{"id":null,"created_at":1}`, `{"id":42,"created_at":1}`,
	`{}`, `[]`, `null`, `"x"`, `{`, ``, "{\"id\":\"\xff\"}",
}

// slowItem decodes through encoding/json only, the reference for the one-pass path.
type slowItem struct{ Item }

func (s *slowItem) UnmarshalJSON(data []byte) error { return s.unmarshalSlow(data) }

// checkOnePass fails t unless, on data, the one-pass item decoder and UnmarshalItems agree
// exactly (values by reflect.DeepEqual, errors by text) with encoding/json's path.
func checkOnePass(t *testing.T, data []byte) {
	t.Helper()
	var ref Item
	refErr := ref.unmarshalSlow(data)
	// The one pass checks the syntax as it goes: what it accepts must be valid JSON in valid
	// UTF-8, and decode as encoding/json decodes it, with and without shared text and arena.
	start := skipWS(data, 0)
	var arena []string
	for _, text := range []string{"", string(data)} {
		got, end, ok := decodeItem(data, bytes.Clone(data), text, start, &arena)
		if !ok {
			continue
		}
		value := data[start:end]
		if !json.Valid(value) || !utf8.Valid(value) {
			t.Fatalf("%q: the one-pass decoder accepted %q, which is not valid JSON in UTF-8", data, value)
		}
		var want Item
		if err := want.unmarshalSlow(value); err != nil {
			t.Fatalf("%q: the one-pass decoder accepted what encoding/json refuses (%v)", value, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: one pass gave\n%#v\nencoding/json\n%#v", value, got, want)
		}
	}
	var it Item
	if err := it.UnmarshalJSON(data); fmt.Sprint(err) != fmt.Sprint(refErr) || (err == nil && !reflect.DeepEqual(it, ref)) {
		t.Fatalf("%q: UnmarshalJSON gave %v, encoding/json %v", data, err, refErr)
	}
	for _, list := range [][]byte{
		append(append([]byte("["), data...), ']'),
		append(append(append(append([]byte(" [ "), data...), " ,\n"...), data...), " ] "...),
	} {
		var want []slowItem
		wantErr := json.Unmarshal(list, &want)
		got, err := UnmarshalItems(list)
		if fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: UnmarshalItems error %v, encoding/json %v", list, err, wantErr)
		}
		if err != nil {
			continue
		}
		if len(got) != len(want) {
			t.Fatalf("%q: UnmarshalItems gave %d items, encoding/json %d", list, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i].Item) {
				t.Fatalf("%q: item %d differs:\n%#v\n%#v", list, i, got[i], want[i].Item)
			}
		}
	}
}

// TestOnePassItemDecodeAgreesWithEncodingJSON pins the one-pass item decoder and
// UnmarshalItems to encoding/json's strict path on every case, and checks that the common
// shapes do take the one pass.
func TestOnePassItemDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range itemDecodeCases {
		checkOnePass(t, []byte(in))
	}
	// Over shareLimit, keys and tags get copies of their own; the value is the same.
	large := `{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"k":1},"tags":["t"],"content":"` +
		strings.Repeat("x", shareLimit) + `"}`
	checkOnePass(t, []byte(large))
	for _, in := range append(itemDecodeCases[:7], large) {
		if _, _, ok := decodeItem([]byte(in), []byte(in), "", skipWS([]byte(in), 0), nil); !ok {
			t.Errorf("%q: the one-pass decoder declined a common shape", in)
		}
	}
	for _, in := range []string{`[]`, ` [ ] `, `null`, `{}`, `[1]`, `[null]`, `[{}]`, `[` + exactWire + `,{"x":1}]`} {
		var want []slowItem
		wantErr := json.Unmarshal([]byte(in), &want)
		got, err := UnmarshalItems([]byte(in))
		// The reference's element type has another name, which encoding/json's type errors
		// quote.
		refErr := strings.ReplaceAll(fmt.Sprint(wantErr), "memory.slowItem", "memory.Item")
		if fmt.Sprint(err) != refErr || (got == nil) != (want == nil) || len(got) != len(want) {
			t.Errorf("%q: UnmarshalItems gave %d items (nil %v), %v; encoding/json %d (nil %v), %v",
				in, len(got), got == nil, err, len(want), want == nil, wantErr)
		}
	}
}

// TestMinItemBytes: the shortest item the decoder accepts is minItemBytes long, so a page's
// length bounds its item count.
func TestMinItemBytes(t *testing.T) {
	shortest := `{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":0}`
	if _, err := UnmarshalItem([]byte(shortest)); err != nil || len(shortest) != minItemBytes {
		t.Fatalf("%s: %d bytes, %v", shortest, len(shortest), err)
	}
}

// TestOnePassRawValuesDoNotShareCapacity: raw values come from one buffer, so appending to
// one must not write into the next.
func TestOnePassRawValuesDoNotShareCapacity(t *testing.T) {
	data := []byte(`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"a":1,"b":2},"content":3}`)
	it, _, ok := decodeItem(data, data, string(data), 0, nil)
	if !ok {
		t.Fatal("declined")
	}
	_ = append(it.Metadata["a"], 'x')
	_ = append(it.Content, 'x')
	if string(it.Metadata["b"]) != "2" || string(it.Metadata["a"]) != "1" || string(it.Content) != "3" {
		t.Fatalf("an append overwrote another value: %s", it.Metadata)
	}
}

// FuzzItemDecodeOnePass holds the one-pass decoder and UnmarshalItems to encoding/json's
// strict path on any input.
func FuzzItemDecodeOnePass(f *testing.F) {
	for _, s := range itemDecodeCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOnePass(t, data)
	})
}

// TestPageTagListsDoNotShareCapacity: a page's tag lists come from one array, so appending
// to one must not write into the next.
func TestPageTagListsDoNotShareCapacity(t *testing.T) {
	page := []byte(`[{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"tags":["a","b"]},` +
		`{"id":"7f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":2,"tags":["c"]},` +
		`{"id":"8f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":3,"tags":[]}]`)
	items, err := UnmarshalItems(page)
	if err != nil || len(items) != 3 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	_ = append(items[0].Tags, "x")
	_ = append(items[2].Tags, "y")
	if !reflect.DeepEqual(items[1].Tags, []string{"c"}) || !reflect.DeepEqual(items[0].Tags, []string{"a", "b"}) {
		t.Fatalf("an append overwrote another tag list: %q %q", items[0].Tags, items[1].Tags)
	}
}

// TestKeysAndTagsSurviveWritesToRawValues: keys and tags share the decoder's copy of the
// input with the raw values, so no write through a raw value, in place or by append, may
// change a key or a tag.
func TestKeysAndTagsSurviveWritesToRawValues(t *testing.T) {
	page := []byte(`[{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"ka":"va","kb":[1]},"content":{"kc":"x"},"tags":["ta","tb"]},` +
		`{"id":"7f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":2,"content":"ka","metadata":{"kd":{"ke":1}},"tags":["tc"]}]`)
	items, err := UnmarshalItems(page)
	if err != nil {
		t.Fatal(err)
	}
	one, err := UnmarshalItem([]byte(`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1,"metadata":{"ka":"va"},"content":"c","tags":["ta"]}`))
	if err != nil {
		t.Fatal(err)
	}
	items = append(items, one)
	type shape struct {
		keys []string
		tags []string
	}
	before := make([]shape, len(items))
	scribble := func(b []byte) {
		for i := range b {
			b[i] = '#'
		}
		_ = append(b, "########"...)
	}
	for i, it := range items {
		for k := range it.Metadata {
			before[i].keys = append(before[i].keys, strings.Clone(k))
		}
		before[i].tags = slices.Clone(it.Tags)
		slices.Sort(before[i].keys)
	}
	for _, it := range items {
		scribble(it.Content)
		for _, v := range it.Metadata {
			scribble(v)
		}
	}
	for i, it := range items {
		var keys []string
		for k := range it.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, before[i].keys) || !slices.Equal(it.Tags, before[i].tags) {
			t.Fatalf("item %d: keys %q tags %q, were %q %q", i, keys, it.Tags, before[i].keys, before[i].tags)
		}
	}
}
