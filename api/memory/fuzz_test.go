package memory

import (
	"encoding/json"
	"testing"
)

// The fuzz targets feed hostile bytes to the three wire decoders. Properties: decoding never
// panics; whatever decodes also encodes; and encoding then decoding again gives an equal
// value, so the server can echo anything it accepted. `go test` runs them on the seed corpus;
// hack/test.sh also runs each with -fuzz for a few seconds.

func FuzzItemDecode(f *testing.F) {
	for _, s := range []string{
		exactWire,
		`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`,
		`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":-1.0000005e3,"content":"\u0000\ud800","tags":[""]}`,
		`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":"1"}`,
		`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1e999,"metadata":{"a":[[[[]]]]}}`,
		`{"id":null}`, `[]`, `null`, `{`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var it Item
		if err := it.UnmarshalJSON(data); err != nil {
			return
		}
		out, err := json.Marshal(it)
		if err != nil {
			t.Fatalf("decoded item does not encode: %v\ninput: %q", err, data)
		}
		var back Item
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("encoded item does not decode: %v\nencoded: %s", err, out)
		}
		if !back.Equal(it) {
			// JSONEqual's depth bound makes very deep values unequal to themselves; only
			// byte-identical re-encoding is then required.
			out2, err := json.Marshal(back)
			if err != nil || string(out2) != string(out) {
				t.Fatalf("round trip changed the item in %v\ninput: %q\nencoded: %s", back.Diff(it), data, out)
			}
		}
	})
}

func FuzzQueryDecode(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"text":"Hé","tags":["b","a","b"],"filters":{"n":9007199254740993},"limit":0}`,
		`{"text":null,"tags":null,"filters":null,"limit":-1}`,
		`{"limit":"5"}`, `{"limit":1e2}`, `{"tags":[null]}`, `{"x":1}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var q Query
		if err := q.UnmarshalJSON(data); err != nil {
			return
		}
		if q.Limit > MaxWireLimit || q.Limit < -MaxWireLimit {
			t.Fatalf("limit %d escaped the bound", q.Limit)
		}
		out, err := json.Marshal(q)
		if err != nil {
			t.Fatalf("decoded query does not encode: %v\ninput: %q", err, data)
		}
		var back Query
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("encoded query does not decode: %v\nencoded: %s", err, out)
		}
		out2, err := json.Marshal(back)
		if err != nil || string(out2) != string(out) {
			t.Fatalf("round trip is not stable:\nfirst:  %s\nsecond: %s", out, out2)
		}
		_ = CheckQuery(fullManifest(), q) // must not panic on any decodable query
	})
}

func FuzzManifestDecode(f *testing.F) {
	valid, err := json.Marshal(fullManifest())
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		string(valid),
		`{"adapter":"","native_item_fields":["id","id"],"dropped_item_fields":["x"],"supported_filters":[""],` +
			`"search_consistency":"","retrieve_fidelity":"lossy","search_fidelity":"full","search_returns_tags":false,"preserves_metadata":true}`,
		`{"adapter":"a","ranked":true}`, `{}`, `[]`, `null`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m Manifest
		if err := m.UnmarshalJSON(data); err != nil {
			return
		}
		verdict := m.Validate() // must not panic
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		var back Manifest
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("encoded manifest does not decode: %v\nencoded: %s", err, out)
		}
		if !back.Equal(m) || back.Hash() != m.Hash() {
			t.Fatalf("round trip changed the manifest\ninput: %q\nencoded: %s", data, out)
		}
		if (back.Validate() == nil) != (verdict == nil) {
			t.Fatalf("round trip changed the validation verdict\ninput: %q", data)
		}
	})
}
