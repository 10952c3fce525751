package relstore

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentmem/memory-adapter-operator/api/memory"
)

// The sampled suffix index's shape, shared by the relational adapters' text indexes (their
// migrations spell the same numbers in SQL): an entry at every TextGramStride-th byte of a
// row's search text, TextGramBytes long, for texts of at most TextIndexBytes. A stride of 4
// keeps a quarter of a full suffix index's entries and serves needles of six bytes or more;
// 12 bytes tell a rare needle's entries from a common one's; the bound keeps one store at
// TextIndexBytes / TextGramStride entries at most (a 1 MiB text would get 250,000).
const (
	// TextGramStride is the distance in bytes between two sampled positions.
	TextGramStride = 4
	// TextGramBytes is how many bytes an entry holds from its position on.
	TextGramBytes = 12
	// TextIndexBytes is the longest search text, in bytes, that gets entries; longer texts
	// are listed by a partial index instead and read by every probe.
	TextIndexBytes = 2048
)

// TextRanges returns the text index ranges (lower and upper bounds) that together hold
// every indexed row containing needle, or nil when the index cannot answer for it: a
// needle shorter than TextGramStride + 2 bytes (an offset's prefix would be under three
// bytes, a range as large as the scope). An occurrence starting at byte m of a row's text
// covers the sampled positions m+j for exactly one j in [0, TextGramStride); the entry
// there starts with needle[j:] (at most TextGramBytes of it), so its gram lies in
// [prefix, prefix || 0xff) for that offset's prefix: search texts are lower-cased valid
// UTF-8 (strings.ToLower replaces invalid bytes), in which no byte is 0xff.
func TextRanges(needle string) (lo, hi [][]byte) {
	if len(needle) < TextGramStride+2 {
		return nil, nil
	}
	for j := range TextGramStride {
		p := []byte(needle[j:min(len(needle), j+TextGramBytes)])
		lo = append(lo, p)
		hi = append(hi, append(slices.Clip(p), 0xff))
	}
	return lo, hi
}

// TextGrams is the text index's entries for one search text, as the migrations compute
// them in SQL: the distinct TextGramBytes-byte grams at every TextGramStride-th byte with
// three bytes left, none for a text longer than TextIndexBytes. The adapters' tests compare
// their index tables with it.
func TextGrams(text string) map[string]bool {
	out := map[string]bool{}
	if len(text) > TextIndexBytes {
		return out
	}
	for p := 0; p+3 <= len(text); p += TextGramStride {
		out[text[p:min(len(text), p+TextGramBytes)]] = true
	}
	return out
}

// TextIndexTexts are contents for the text indexes' tests whose needles start at every byte
// offset modulo TextGramStride, span multi-byte characters, end their text, repeat, or lie
// beyond TextIndexBytes (the rows an index leaves to its partial index).
func TextIndexTexts() []string {
	texts := []string{
		"item 4242 lorem ipsum w42 dolor",
		"item 14242 lorem ipsum w42 dolor",
		"lorem ipsum item 7",
		"zebra crossing",
		"naïve café über straße",
		"日本語のテキストと絵文字🙂🙃を含む",
		"abababababababababab",
		"needle at the end: xyzzy-plugh",
		strings.Repeat("padding ", 300) + "deep needle qwerty",
		strings.Repeat("é", 1100) + " long multibyte tail",
	}
	for shift := range TextGramStride + 1 {
		texts = append(texts, strings.Repeat("_", shift)+"shifted token marker")
	}
	return texts
}

// TextIndexNeedles are absent, rare and common needles against TextIndexTexts: short ones
// an index does not answer for, every trigram present but the needle absent, multi-byte,
// within and beyond TextIndexBytes.
func TextIndexNeedles() []string {
	return []string{
		"zebra", "item 4242 lorem", "item 42", "lorem item", "LOREM IPSUM", "orem ipsum w42 d",
		"café über", "über straße", "テキストと絵", "🙂🙃", "絵文字🙂", "ababab", "bababa",
		"xyzzy-plugh", "-plugh", "plugh!", "deep needle", "needle", "ng multibyte tail", "éééééé é",
		"token marker", "shifted", "_shifted", "__shifted token", "ed tok",
		"em ite", "w42 dolor", "ipsum w", "absent entirely", "ab", "é",
	}
}

// LongTexts counts the items whose search text is too long for a text index
// (TextIndexBytes), the rows every probe reads beside the index's own.
func LongTexts(items []memory.Item) int {
	n := 0
	for _, it := range items {
		if len(memory.SearchText(it.Content)) > TextIndexBytes {
			n++
		}
	}
	return n
}

// TextIndexItems returns one item per TextIndexTexts text (its content the text as a JSON
// string, its tag "x") with its Prepare result under rules, for the backfill tests that
// write rows the way an earlier build did.
func TextIndexItems(rules Rules) ([]memory.Item, []Prepared, error) {
	var items []memory.Item
	var prepared []Prepared
	for _, text := range TextIndexTexts() {
		c, err := json.Marshal(text)
		if err != nil {
			return nil, nil, err
		}
		it := memory.NewItem(c, "x")
		p, err := Prepare(it, rules)
		if err != nil {
			return nil, nil, err
		}
		items, prepared = append(items, it), append(prepared, p)
	}
	return items, prepared, nil
}
