package memory

import (
	"encoding/json"
	"testing"
)

// benchCodecItem is a typical item: short JSON content, two metadata keys, two tags.
func benchCodecItem() Item {
	it := NewItem(json.RawMessage(`{"text":"item 4242 lorem ipsum w42 dolor"}`), "t42", "common")
	it.Metadata["source"] = json.RawMessage(`"s2"`)
	it.Metadata["branch_id"] = json.RawMessage(`4242`)
	return it
}

// BenchmarkItemCodec measures the item's codec as its callers use it: MarshalItem (the
// remote client's store body, Redis's stored payload) and UnmarshalItem (Redis's retrieve
// and its store-time read-back check); before issue 16 those callers used json.Marshal and
// json.Unmarshal. hack/perf/callgrind.sh counts its instructions per call
// (docs/performance.md).
func BenchmarkItemCodec(b *testing.B) {
	it := benchCodecItem()
	data, err := MarshalItem(it)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := MarshalItem(it); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := UnmarshalItem(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
