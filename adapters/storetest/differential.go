package storetest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// DifferentialItems is how many items Differential stores: enough that its common tag and
// text are on more items than an adapter's index probe reads (relstore.TagProbeLimit,
// 1,000), so both the probed and the walking search run.
const DifferentialItems = 1100

// Differential stores random items, replaces some of them (new tags, text and metadata,
// same position), and compares every search of a random set against memory.Matches over the
// same items in insertion order: the ids and their order must be identical. The data has
// tags on nearly every item, on a seventh, on one or two, and on none (absent), filter
// values likewise, number filters in several spellings, and text with rare, absent and
// short (under three characters) needles, in mixed case. seed makes a failure repeatable.
func Differential(t *testing.T, f Factory, seed uint64) {
	t.Helper()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	h := f(t)
	s := Open(t, h)
	words := []string{"alpha", "Beta", "gamma", "DELTA", "epsilon", "zeta", "eta", "theta", "iota", "kappa"}
	order := []uuid.UUID{}
	current := map[uuid.UUID]memory.Item{}
	gen := func(i int) memory.Item {
		var text strings.Builder
		text.WriteString("Item ") // on every item: a text on more items than the probe reads
		for range 3 + r.IntN(4) {
			text.WriteString(words[r.IntN(len(words))] + " ")
		}
		if r.IntN(200) == 0 {
			text.WriteString("Rarissimo ")
		}
		fmt.Fprintf(&text, "n%d", i)
		content, _ := json.Marshal(map[string]string{"text": text.String()})
		tags := []string{}
		if r.IntN(20) != 0 {
			tags = append(tags, "common")
		}
		if r.IntN(7) == 0 {
			tags = append(tags, fmt.Sprintf("m%d", r.IntN(3)))
		}
		if r.IntN(500) == 0 {
			tags = append(tags, "rare", "rare") // a repeated tag is one match
		}
		it := memory.NewItem(content, tags...)
		it.Metadata["source"] = json.RawMessage(fmt.Sprintf(`"s%d"`, r.IntN(4)))
		if r.IntN(300) == 0 {
			it.Metadata["source"] = json.RawMessage(`"s-rare"`)
		}
		switch r.IntN(4) {
		case 0:
			it.Metadata["branch_id"] = json.RawMessage(fmt.Sprint(r.IntN(5)))
		case 1:
			it.Metadata["branch_id"] = json.RawMessage(fmt.Sprintf("%d.0", r.IntN(5)))
		case 2:
			it.Metadata["branch_id"] = json.RawMessage(fmt.Sprint(1000 + i))
		}
		return it
	}
	for i := range DifferentialItems {
		it := gen(i)
		MustStore(t, s, it)
		order = append(order, it.ID)
		current[it.ID] = it
	}
	for i := range 60 {
		// Replacing keeps the position: only the item's own fields change.
		id := order[r.IntN(len(order))]
		it := gen(DifferentialItems + i)
		it.ID, it.CreatedAt = id, current[id].CreatedAt
		MustStore(t, s, it)
		current[id] = it
	}
	Visible(t, h)

	tagChoices := [][]string{nil, {"common"}, {"m1"}, {"rare"}, {"absent-tag"}, {"rare", "absent-tag"},
		{"m0", "m2"}, {"common", "rare"}, {"absent-tag", "also-absent"}}
	filterChoices := []map[string]json.RawMessage{nil,
		{"source": json.RawMessage(`"s1"`)}, {"source": json.RawMessage(`"s-rare"`)},
		{"source": json.RawMessage(`"s-absent"`)}, {"branch_id": json.RawMessage(`3`)},
		{"branch_id": json.RawMessage(`3.0`)}, {"branch_id": json.RawMessage(`1500`)},
		{"branch_id": json.RawMessage(`999999`)}, {"branch_id": json.RawMessage(`"3"`)}}
	textChoices := []*string{nil, Text("alpha"), Text("rarissimo"), Text("RARISSIMO n"), Text("absent text"),
		Text("a"), Text("Ze"), Text("n10"), Text("eta g"), Text("zzz"), Text("item"), Text("item delta")}
	limits := []int{1, 5, 50, 2000}
	for range 250 {
		q := memory.Query{Tags: tagChoices[r.IntN(len(tagChoices))], Filters: filterChoices[r.IntN(len(filterChoices))],
			Text: textChoices[r.IntN(len(textChoices))], Limit: limits[r.IntN(len(limits))]}
		var lower string
		if q.Text != nil {
			lower = memory.Needle(*q.Text)
		}
		want := []uuid.UUID{}
		for _, id := range order {
			if len(want) < q.Limit && memory.Matches(current[id], q, lower) {
				want = append(want, id)
			}
		}
		got, err := s.Search(Ctx(t), q)
		if err != nil {
			t.Fatalf("Search(%s): %v", describe(q), err)
		}
		if ids := IDs(got); !slices.Equal(ids, want) {
			t.Fatalf("Search(%s): %d hits, the reference %d; first ids %v, want %v", describe(q), len(ids), len(want),
				ids[:min(5, len(ids))], want[:min(5, len(want))])
		}
	}
}

// describe renders a query for a failure message.
func describe(q memory.Query) string {
	text := "<none>"
	if q.Text != nil {
		text = fmt.Sprintf("%q", *q.Text)
	}
	filters, _ := json.Marshal(q.Filters)
	return fmt.Sprintf("text %s, tags %q, filters %s, limit %d", text, q.Tags, filters, q.Limit)
}
