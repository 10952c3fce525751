package memory

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/gomega"
)

// exactWire holds every value the contract says must survive a round trip exactly: integers
// above 2^53, nested objects, unicode (including astral plane and combining characters), a
// microsecond timestamp and a tag list with order and duplicates.
const exactWire = `{
  "id": "6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e",
  "created_at": 1767225600.123456,
  "metadata": {
    "branch_id": "b-1",
    "big": 9007199254740993,
    "nested": {"z": 1, "a": [1, 2.50, {"y": true, "x": null}]}
  },
  "content": {
    "text": "héllo wörld ✓ 😀 e\u0301 \"quoted\" <tag> &",
    "huge": 123456789012345678901234567890,
    "neg": -9223372036854775809,
    "frac": 0.1000000000000000055511151231257827
  },
  "tags": ["b", "a", "b"]
}`

func TestItemWireRoundTripIsExact(t *testing.T) {
	g := NewWithT(t)
	var it Item
	g.Expect(json.Unmarshal([]byte(exactWire), &it)).To(Succeed())

	g.Expect(it.ID).To(Equal(uuid.MustParse("6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e")))
	g.Expect(it.CreatedAt).To(Equal(1767225600.123456))
	g.Expect(it.Tags).To(Equal([]string{"b", "a", "b"}))

	// Keys reordered, whitespace changed, same numbers: JSON-equal.
	g.Expect(JSONEqual(it.Metadata["nested"], []byte(`{"a":[1,2.5,{"x":null,"y":true}],"z":1}`))).To(BeTrue())
	// 2^53+1 is not representable as float64; a float round trip would turn it into 2^53.
	g.Expect(JSONEqual(it.Metadata["big"], []byte(`9007199254740993`))).To(BeTrue())
	g.Expect(JSONEqual(it.Metadata["big"], []byte(`9007199254740992`))).To(BeFalse())

	out, err := json.Marshal(it)
	g.Expect(err).NotTo(HaveOccurred())
	for _, literal := range []string{
		`9007199254740993`, `123456789012345678901234567890`, `-9223372036854775809`,
		`0.1000000000000000055511151231257827`, `"created_at":1767225600.123456`, `"tags":["b","a","b"]`,
	} {
		g.Expect(string(out)).To(ContainSubstring(literal), "number literals and tags must be written verbatim")
	}

	var back Item
	g.Expect(json.Unmarshal(out, &back)).To(Succeed())
	g.Expect(back.Equal(it)).To(BeTrue(), "diff: %v", back.Diff(it))
	g.Expect(back.Diff(it)).To(BeEmpty())

	var content, backContent struct{ Text string }
	g.Expect(json.Unmarshal(it.Content, &content)).To(Succeed())
	g.Expect(json.Unmarshal(back.Content, &backContent)).To(Succeed())
	g.Expect(backContent.Text).To(Equal("héllo wörld ✓ 😀 e\u0301 \"quoted\" <tag> &"))
	g.Expect(backContent.Text).To(Equal(content.Text))

	// A second round trip is byte-stable.
	out2, err := json.Marshal(back)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out2)).To(Equal(string(out)))
}

func TestItemDecodeDefaults(t *testing.T) {
	g := NewWithT(t)
	var it Item
	g.Expect(json.Unmarshal([]byte(`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`), &it)).To(Succeed())
	g.Expect(it.Metadata).To(Equal(map[string]json.RawMessage{}))
	g.Expect(string(it.Content)).To(Equal("null"))
	g.Expect(it.Tags).To(Equal([]string{}))
	g.Expect(it.CreatedAt).To(Equal(1.0))

	out, err := json.Marshal(it)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(`{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1.0,"metadata":{},"content":null,"tags":[]}`))
}

func TestItemDecodeRejectsMalformed(t *testing.T) {
	const id = `"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e"`
	tests := []struct {
		name    string
		input   string
		wantSub string
	}{
		{"invalid UUID", `{"id":"not-a-uuid","created_at":1}`, "invalid UUID"},
		{"UUID without dashes", `{"id":"6f1c0f6e8a554c399a392a0b6f0d4b1e","created_at":1}`, "36-character form"},
		{"UUID in braces", `{"id":"{6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e}","created_at":1}`, "36-character form"},
		{"UUID with urn prefix", `{"id":"urn:uuid:6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e","created_at":1}`, "36-character form"},
		{"UUID with bad hex", `{"id":"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4bzz","created_at":1}`, "invalid UUID"},
		{"id as number", `{"id":5,"created_at":1}`, "cannot unmarshal number"},
		{"missing id", `{"created_at":1}`, `missing required field "id"`},
		{"null id", `{"id":null,"created_at":1}`, `missing required field "id"`},
		{"missing created_at", `{"id":` + id + `}`, `missing required field "created_at"`},
		{"null created_at", `{"id":` + id + `,"created_at":null}`, `missing required field "created_at"`},
		{"created_at as string", `{"id":` + id + `,"created_at":"1.5"}`, "not a JSON number"},
		{"created_at as bool", `{"id":` + id + `,"created_at":true}`, "not a JSON number"},
		{"created_at as object", `{"id":` + id + `,"created_at":{}}`, "not a JSON number"},
		{"created_at huge exponent", `{"id":` + id + `,"created_at":1e99999}`, "exponent out of range"},
		{"created_at beyond year 9999", `{"id":` + id + `,"created_at":1e20}`, "out of range"},
		{"created_at before year 1", `{"id":` + id + `,"created_at":-1e12}`, "out of range"},
		{"created_at overlong literal", `{"id":` + id + `,"created_at":1.` + strings.Repeat("1", 80) + `}`, "too long"},
		{"tags not an array", `{"id":` + id + `,"created_at":1,"tags":"a"}`, "cannot unmarshal string"},
		{"tag not a string", `{"id":` + id + `,"created_at":1,"tags":["a",1]}`, "cannot unmarshal number"},
		{"null tag", `{"id":` + id + `,"created_at":1,"tags":["a",null]}`, "element 1: null is not a string"},
		{"metadata not an object", `{"id":` + id + `,"created_at":1,"metadata":[1]}`, "cannot unmarshal array"},
		{"unknown field", `{"id":` + id + `,"created_at":1,"score":0.9}`, `unknown field "score"`},
		{"trailing data", `{"id":` + id + `,"created_at":1} {}`, "trailing data"},
		{"not JSON", `{"id":`, "unexpected EOF"},
		{"array", `[]`, "cannot unmarshal array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var it Item
			err := it.UnmarshalJSON([]byte(tt.input))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantSub)))
			g.Expect(err.Error()).To(HavePrefix("decode item: "))
			g.Expect(it.ID).To(Equal(uuid.Nil), "a failed decode leaves the item untouched")
		})
	}
}

func TestItemMarshalRejectsInvalidValues(t *testing.T) {
	base := NewItem(json.RawMessage(`{"a":1}`), "x")
	tests := []struct {
		name    string
		mutate  func(*Item)
		wantSub string
	}{
		{"invalid content", func(it *Item) { it.Content = json.RawMessage(`{"a":`) }, "content: invalid JSON"},
		{"invalid metadata value", func(it *Item) { it.Metadata = map[string]json.RawMessage{"k": json.RawMessage(`nope`)} }, `metadata "k": invalid JSON`},
		{"created_at beyond year 9999", func(it *Item) { it.CreatedAt = math.Nextafter(MaxTimestamp, math.Inf(1)) }, "created_at: out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			it := base.Clone()
			tt.mutate(&it)
			_, err := json.Marshal(it)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantSub)))
		})
	}
}

func TestFormatTimestamp(t *testing.T) {
	tests := []struct {
		sec  float64
		want string // what Python's repr(float) writes
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{0.000001, "1e-06"},
		{0.0001, "0.0001"},
		{1.5, "1.5"},
		{1, "1.0"},
		{1.0000004, "1.0000004"},
		{1767225600, "1767225600.0"},
		{1767225600.123456, "1767225600.123456"},
		{1796513095.4649496, "1796513095.4649496"},
		{1764975600.5738423, "1764975600.5738423"},
		{-0.5, "-0.5"},
		{-62135596800, "-62135596800.0"},
		{253402300799.99997, "253402300799.99997"},
		{5e-324, "5e-324"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(FormatTimestamp(tt.sec)).To(Equal(tt.want))
			back, err := ParseTimestamp(tt.want)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(math.Float64bits(back)).To(Equal(math.Float64bits(tt.sec)), "bit-exact round trip")
		})
	}
}

// TestTimestampRoundTripsEveryBit walks doubles of today's Unix seconds one ULP at a time, and
// random ones across the range: each is written and read back as the same double.
func TestTimestampRoundTripsEveryBit(t *testing.T) {
	check := func(sec float64) {
		t.Helper()
		s := FormatTimestamp(sec)
		back, err := ParseTimestamp(s)
		if err != nil || math.Float64bits(back) != math.Float64bits(sec) {
			t.Fatalf("%v (%x) written %q read back %v (%x), err %v", sec, math.Float64bits(sec), s, back, math.Float64bits(back), err)
		}
	}
	sec := 1764975600.5738423
	for range 10_000 {
		check(sec)
		sec = math.Nextafter(sec, math.Inf(1))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		check(MinTimestamp + r.Float64()*(MaxTimestamp-MinTimestamp))
		check(r.Float64())
	}
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{in: "1767225600.123456", want: 1767225600.123456},
		{in: "1767225600", want: 1767225600},
		{in: "1796513095.4649496", want: 1796513095.4649496},
		// More digits than a double holds round once, to the nearest double, as Python reads it.
		{in: "1796513095.46494960000000000001", want: 1796513095.4649496},
		{in: "1.7672256001234567e9", want: 1767225600.1234567},
		{in: "1767225600123456e-6", want: 1767225600.123456},
		{in: "1e0003", want: 1000},
		{in: "1e-400", want: 0},
		{in: "-0", want: math.Copysign(0, -1)},
		{in: "1/2", wantErr: "not a JSON number"},
		{in: "0x10", wantErr: "not a JSON number"},
		{in: "+1", wantErr: "not a JSON number"},
		{in: "01", wantErr: "not a JSON number"},
		{in: "1.", wantErr: "not a JSON number"},
		{in: ".5", wantErr: "not a JSON number"},
		{in: "1e", wantErr: "not a JSON number"},
		{in: "1_0", wantErr: "not a JSON number"},
		{in: "Inf", wantErr: "not a JSON number"},
		{in: "NaN", wantErr: "not a JSON number"},
		{in: "", wantErr: "not a JSON number"},
		{in: strings.Repeat("1", 65), wantErr: "too long"},
		{in: "1e1000", wantErr: "out of range"},
		{in: "1e-99999", wantErr: "exponent out of range"},
		{in: "253402300799.999999", want: MaxTimestamp}, // the old wire's last value
		{in: "253402300800.001", wantErr: "out of range"},
		{in: "-62135596801", wantErr: "out of range"}, // just before year 1
		{in: "1e300", wantErr: "out of range"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseTimestamp(tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(math.Float64bits(got)).To(Equal(math.Float64bits(tt.want)), "got %v", got)
		})
	}
}

func TestTimeConversions(t *testing.T) {
	g := NewWithT(t)
	ts := time.Date(2026, 12, 6, 1, 2, 3, 456789000, time.UTC)
	g.Expect(Timestamp(ts)).To(Equal(float64(ts.Unix()) + 0.456789))
	g.Expect(TimeOf(Timestamp(ts)).Round(time.Microsecond)).To(Equal(ts))
	g.Expect(TimeOf(-0.5)).To(Equal(time.Unix(0, -500_000_000).UTC()))
	g.Expect(SameTimestamp(0, math.Copysign(0, -1))).To(BeFalse(), "0.0 and -0.0 are different doubles")
	g.Expect(SameTimestamp(1.5, 1.5)).To(BeTrue())
}

func TestValidNumberLiteralMatchesEncodingJSON(t *testing.T) {
	// The hand-written grammar check must agree with encoding/json on what a number is.
	inputs := []string{"0", "-0", "1", "10", "1.5", "-1.5e10", "1E+2", "1e-2", "0.0",
		"01", "-", "1.", ".1", "1e", "1e+", "+1", "0x1", "1_000", " 1", "1 ", "--1", "1.2.3", "Infinity", ""}
	for _, in := range inputs {
		// None of the inputs is a JSON string, literal, array or object, so valid JSON
		// without surrounding whitespace means a number literal.
		want := json.Valid([]byte(in)) && in == strings.TrimSpace(in)
		NewWithT(t).Expect(validNumberLiteral(in)).To(Equal(want), "input %q", in)
	}
}

func TestParseID(t *testing.T) {
	g := NewWithT(t)
	id, err := ParseID("6F1C0F6E-8A55-4C39-9A39-2A0B6F0D4B1E")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(id.String()).To(Equal("6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e"), "upper case is accepted, written lower case")
	_, err = ParseID(strings.Repeat("x", 10_000))
	g.Expect(err).To(HaveOccurred())
	g.Expect(len(err.Error())).To(BeNumerically("<", 200), "error messages quote hostile input only briefly")
}

func TestItemEqualAndDiff(t *testing.T) {
	base := Item{
		ID:        uuid.MustParse("6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e"),
		CreatedAt: 1767225600.1234567,
		Metadata:  map[string]json.RawMessage{"source": json.RawMessage(`"cli"`)},
		Content:   json.RawMessage(`{"a":1,"b":[true]}`),
		Tags:      []string{"b", "a", "b"},
	}
	tests := []struct {
		name   string
		mutate func(*Item)
		want   []ItemField
	}{
		{"identical", func(*Item) {}, nil},
		{"content keys reordered and numbers respelled", func(it *Item) { it.Content = json.RawMessage(` {"b":[true],"a":1.0e0} `) }, nil},
		{"content set to nil (null)", func(it *Item) { it.Content = nil }, []ItemField{FieldContent}},
		{"id", func(it *Item) { it.ID = uuid.New() }, []ItemField{FieldID}},
		{"created_at", func(it *Item) { it.CreatedAt += 1e-6 }, []ItemField{FieldCreatedAt}},
		// The lie this rule exists for: a store that keeps microseconds.
		{"created_at rounded to the microsecond", func(it *Item) { it.CreatedAt = math.Round(it.CreatedAt*1e6) / 1e6 }, []ItemField{FieldCreatedAt}},
		{"created_at one ULP away", func(it *Item) { it.CreatedAt = math.Nextafter(it.CreatedAt, 0) }, []ItemField{FieldCreatedAt}},
		{"metadata value", func(it *Item) { it.Metadata = map[string]json.RawMessage{"source": json.RawMessage(`"api"`)} }, []ItemField{FieldMetadata}},
		{"metadata extra key", func(it *Item) { it.Metadata["x"] = json.RawMessage(`null`) }, []ItemField{FieldMetadata}},
		{"content", func(it *Item) { it.Content = json.RawMessage(`{"a":2,"b":[true]}`) }, []ItemField{FieldContent}},
		{"tag order", func(it *Item) { it.Tags = []string{"a", "b", "b"} }, []ItemField{FieldTags}},
		{"tag duplicates", func(it *Item) { it.Tags = []string{"b", "a"} }, []ItemField{FieldTags}},
		{"everything", func(it *Item) {
			*it = Item{ID: uuid.New(), Content: json.RawMessage(`1`)}
		}, []ItemField{FieldID, FieldCreatedAt, FieldMetadata, FieldContent, FieldTags}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			other := base.Clone()
			tt.mutate(&other)
			g.Expect(base.Diff(other)).To(Equal(tt.want))
			g.Expect(base.Equal(other)).To(Equal(len(tt.want) == 0))
			g.Expect(other.Equal(base)).To(Equal(len(tt.want) == 0), "Equal is symmetric")
		})
	}
	// Nil and empty collections are the same value.
	g := NewWithT(t)
	a := Item{ID: base.ID, CreatedAt: base.CreatedAt, Content: json.RawMessage("null")}
	b := Item{ID: base.ID, CreatedAt: base.CreatedAt, Metadata: map[string]json.RawMessage{}, Tags: []string{}}
	g.Expect(a.Equal(b)).To(BeTrue())
}

func TestItemCloneIsDeep(t *testing.T) {
	g := NewWithT(t)
	orig := NewItem(json.RawMessage(`{"a":1}`), "x", "y")
	orig.Metadata["k"] = json.RawMessage(`[1]`)
	c := orig.Clone()
	c.Content[2] = 'b'
	c.Metadata["k"][1] = '2'
	c.Metadata["new"] = json.RawMessage(`1`)
	c.Tags[0] = "changed"
	g.Expect(string(orig.Content)).To(Equal(`{"a":1}`))
	g.Expect(string(orig.Metadata["k"])).To(Equal(`[1]`))
	g.Expect(orig.Metadata).NotTo(HaveKey("new"))
	g.Expect(orig.Tags).To(Equal([]string{"x", "y"}))
}

func TestNewItemDefaults(t *testing.T) {
	g := NewWithT(t)
	tags := []string{"a"}
	it := NewItem(nil, tags...)
	tags[0] = "mutated"
	g.Expect(it.ID.Version()).To(Equal(uuid.Version(4)))
	g.Expect(TimeOf(it.CreatedAt)).To(BeTemporally("~", time.Now(), time.Minute))
	g.Expect(it.Tags).To(Equal([]string{"a"}), "NewItem copies the tags")
	g.Expect(string(it.ContentJSON())).To(Equal("null"))
	g.Expect(NewItem(nil).ID).NotTo(Equal(it.ID))
}

func TestQueryWire(t *testing.T) {
	g := NewWithT(t)
	var q Query
	g.Expect(json.Unmarshal([]byte(`{}`), &q)).To(Succeed())
	g.Expect(q).To(Equal(Query{Limit: DefaultLimit}), "an empty query asks for lionagi's default page")

	g.Expect(json.Unmarshal([]byte(`{"text":"Hé","tags":["b","a","b"],"filters":{"n":9007199254740993,"o":{"b":1,"a":2}},"limit":0}`), &q)).To(Succeed())
	g.Expect(*q.Text).To(Equal("Hé"))
	g.Expect(q.Tags).To(Equal([]string{"b", "a", "b"}))
	g.Expect(q.Limit).To(BeZero())
	g.Expect(string(q.Filters["n"])).To(Equal("9007199254740993"))

	out, err := json.Marshal(q)
	g.Expect(err).NotTo(HaveOccurred())
	var back Query
	g.Expect(json.Unmarshal(out, &back)).To(Succeed())
	g.Expect(*back.Text).To(Equal(*q.Text))
	g.Expect(back.Tags).To(Equal(q.Tags))
	g.Expect(back.Limit).To(Equal(q.Limit))
	g.Expect(back.Filters).To(HaveLen(2))
	for k, v := range q.Filters {
		g.Expect(JSONEqual(back.Filters[k], v)).To(BeTrue(), k)
	}
	g.Expect(string(out)).To(ContainSubstring("9007199254740993"))

	absent, err := json.Marshal(Query{Limit: 5})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(absent)).To(Equal(`{"text":null,"tags":null,"filters":null,"limit":5}`))

	// A negative limit decodes so that the adapter can name it in UnsupportedMemoryQuery.
	g.Expect(json.Unmarshal([]byte(`{"limit":-1}`), &q)).To(Succeed())
	g.Expect(q.Limit).To(Equal(-1))

	_, err = json.Marshal(Query{Filters: map[string]json.RawMessage{"k": json.RawMessage("{")}})
	g.Expect(err).To(MatchError(ContainSubstring(`filters "k": invalid JSON`)))
}

func TestQueryDecodeRejectsMalformed(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		wantSub string
	}{
		{"limit as string", `{"limit":"5"}`, "limit: not an integer"},
		{"limit fractional", `{"limit":5.5}`, "limit: not an integer"},
		{"limit with exponent", `{"limit":1e2}`, "limit: not an integer"},
		{"limit null", `{"limit":null}`, "limit: not an integer"},
		{"limit bool", `{"limit":true}`, "limit: not an integer"},
		{"limit too large", `{"limit":1000001}`, "limit: out of range"},
		{"limit beyond int64", `{"limit":99999999999999999999}`, "limit: not an integer"},
		{"text as number", `{"text":5}`, "cannot unmarshal number"},
		{"tags as object", `{"tags":{}}`, "cannot unmarshal object"},
		{"null tag", `{"tags":[null]}`, "element 0: null is not a string"},
		{"filters as array", `{"filters":[]}`, "cannot unmarshal array"},
		{"unknown field", `{"query":"x"}`, `unknown field "query"`},
		{"trailing data", `{} []`, "trailing data"},
		{"not JSON", `{`, "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			q := Query{Limit: 7}
			err := q.UnmarshalJSON([]byte(tt.input))
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantSub)))
			g.Expect(err.Error()).To(HavePrefix("decode query: "))
			g.Expect(q.Limit).To(Equal(7), "a failed decode leaves the query untouched")
		})
	}
}

func TestCheckQuery(t *testing.T) {
	m := fullManifest() // supports branch_id and source
	raw := json.RawMessage(`"x"`)
	tests := []struct {
		name string
		q    Query
		want []string // rejected keys; nil means accepted
	}{
		{"empty query", Query{}, nil},
		{"supported filters", Query{Filters: map[string]json.RawMessage{"source": raw, "branch_id": raw}, Limit: 3}, nil},
		{"limit zero", Query{Limit: 0}, nil},
		{"huge limit", Query{Limit: math.MaxInt}, nil},
		{"negative limit", Query{Limit: -1}, []string{"limit"}},
		{"unsupported filters sorted", Query{Filters: map[string]json.RawMessage{"zeta": raw, "alpha": raw, "source": raw}}, []string{"alpha", "zeta"}},
		{"every rejected key at once", Query{Filters: map[string]json.RawMessage{"m": raw, "limit": raw}, Limit: -5}, []string{"limit", "m"}},
		{"case matters", Query{Filters: map[string]json.RawMessage{"Source": raw}}, []string{"Source"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckQuery(m, tt.q)
			if tt.want == nil {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			var uq *UnsupportedMemoryQuery
			g.Expect(errors.As(err, &uq)).To(BeTrue(), "got %T", err)
			g.Expect(uq.RejectedKeys).To(Equal(tt.want))
			g.Expect(err.Error()).To(Equal("unsupported memory query keys: " + strings.Join(tt.want, ", ")))
		})
	}
}

// TestMarshalRefusesInvalidUTF8 checks that the wire encoder never sends bytes a strict
// client cannot read, nor silently replaces them with U+FFFD.
func TestMarshalRefusesInvalidUTF8(t *testing.T) {
	for _, tc := range []struct {
		name string
		it   Item
	}{
		{"content", Item{Content: json.RawMessage("\"\xff\"")}},
		{"metadata value", Item{Metadata: map[string]json.RawMessage{"k": json.RawMessage("\"\xff\"")}}},
		{"metadata key", Item{Metadata: map[string]json.RawMessage{"\xff": json.RawMessage(`1`)}}},
		{"tag", Item{Tags: []string{"ok", "\xc3("}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := tc.it
			it.ID = uuid.New()
			it.CreatedAt = 1
			if b, err := json.Marshal(it); err == nil {
				t.Fatalf("marshalled invalid UTF-8: %q", b)
			}
		})
	}
}

// TestDecodeRefusesInvalidUTF8 keeps decode and encode symmetric: what decodes, encodes.
func TestDecodeRefusesInvalidUTF8(t *testing.T) {
	for _, in := range []string{
		"{\"id\":\"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e\",\"created_at\":1,\"content\":\"\xff\"}",
		"{\"id\":\"6f1c0f6e-8a55-4c39-9a39-2a0b6f0d4b1e\",\"created_at\":1,\"metadata\":{\"k\":\"\xc3(\"}}",
	} {
		var it Item
		if err := json.Unmarshal([]byte(in), &it); err == nil {
			t.Errorf("decoded invalid UTF-8: %q", in)
		}
	}
	var q Query
	if err := json.Unmarshal([]byte("{\"text\":\"\xff\"}"), &q); err == nil {
		t.Error("decoded a query with invalid UTF-8")
	}
}
