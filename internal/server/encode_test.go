package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// TestResponsesAreTheBytesJSONMarshalWrites pins the server's one-pass item encoder to
// encoding/json's output byte for byte, for the characters encoding/json escapes (<, >, &,
// U+2028, U+2029 in content, metadata keys and values, and tags), an exponent and escapes
// it must keep, and for ordinary items, through retrieve and search.
func TestResponsesAreTheBytesJSONMarshalWrites(t *testing.T) {
	f := newFixture(t, fixtureOpts{token: "t"})
	plain := memory.NewItem(json.RawMessage(`{"text":"plain item","n":1}`), "tag")
	plain.Metadata["source"] = json.RawMessage(`"s"`)
	html := memory.NewItem(json.RawMessage(`{"a<b":"x > y & z \u2028 \u2029 <script>","n":1e400,"esc":"\u00e9\"\\"}`), "<t>", "a&b", "\u2028")
	html.Metadata["source"] = json.RawMessage(`"<&>"`)
	html.Metadata["k<&>\u2029"] = json.RawMessage(`{"v":"\u2028<"}`)
	nullContent := memory.NewItem(nil)
	nullContent.Metadata["source"] = json.RawMessage(`"s"`)
	items := []memory.Item{plain, html, nullContent}
	for _, it := range items {
		if _, err := f.store.Store(context.Background(), it); err != nil {
			t.Fatalf("store: %v", err)
		}
	}
	stored := make([]memory.Item, len(items))
	for i, it := range items {
		got, err := f.store.Retrieve(context.Background(), it.ID)
		if err != nil || got == nil {
			t.Fatalf("retrieve %d: %v", i, err)
		}
		stored[i] = *got
		r := f.do(http.MethodGet, "/v1/items/"+it.ID.String(), "", false, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET item %d: %d %s", i, r.status, r.body)
		}
		if want := itemJSON(t, stored[i]); string(r.body) != want {
			t.Errorf("item %d:\n got %s\nwant %s", i, r.body, want)
		}
	}
	for _, q := range []string{`{"limit":10}`, `{"text":"no such text","limit":10}`} {
		r := f.do(http.MethodPost, "/v1/search", q, false, nil)
		if r.status != http.StatusOK {
			t.Fatalf("search %s: %d %s", q, r.status, r.body)
		}
		var page []memory.Item
		if q == `{"limit":10}` {
			page = stored
		} else {
			page = []memory.Item{}
		}
		want, err := json.Marshal(struct {
			Items []memory.Item `json:"items"`
		}{page})
		if err != nil {
			t.Fatal(err)
		}
		if string(r.body) != string(want) {
			t.Errorf("search %s:\n got %s\nwant %s", q, r.body, want)
		}
	}
}
