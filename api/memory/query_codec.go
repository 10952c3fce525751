package memory

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// The query's one-pass codecs: a search sends one query and the server decodes it, so
// encoding/json's reflection (a dozen allocations and two scans to decode, a map sort and
// a second compacting pass to encode) was a fixed cost of every search. Like the item's,
// they handle the shape every encoder of the contract writes and leave anything else to
// encoding/json, which decides every error and every unusual spelling; the differential
// tests and fuzz targets in query_codec_test.go hold them to it.

// appendQuery appends json.Marshal's bytes for q's wire form (Query.MarshalJSON's) when
// every string in it is printable ASCII without ", \, <, > or &, and every filter value is
// compact JSON without a character json.HTMLEscape changes: json.Marshal then writes each
// string and value as it is. It reports false for anything else.
func appendQuery(b []byte, q Query) ([]byte, bool) {
	var ok bool
	b = append(b, `{"text":`...)
	if q.Text == nil {
		b = append(b, "null"...)
	} else if b, ok = appendPlainString(b, *q.Text); !ok {
		return nil, false
	}
	b = append(b, `,"tags":`...)
	if q.Tags == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range q.Tags {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlainString(b, t); !ok {
				return nil, false
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"filters":`...)
	if q.Filters == nil {
		b = append(b, "null"...)
	} else {
		var small [8]string
		keys := small[:0]
		for k := range q.Filters {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendPlainString(b, k); !ok {
				return nil, false
			}
			b = append(b, ':')
			v := q.Filters[k]
			if end, _, flags, ok := scanValue(v, 0); !ok || end != len(v) || flags != 0 {
				return nil, false
			}
			b = append(b, v...)
		}
		b = append(b, '}')
	}
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(q.Limit), 10)
	return append(b, '}'), true
}

// appendPlainString appends s quoted when it is printable ASCII without ", \, <, > or &,
// which json.Marshal writes as it is.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return nil, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// decodeQuery decodes a query in one pass when data is valid JSON in valid UTF-8 (checked as
// it goes) and has the shape every encoder of this contract writes: an object whose keys are
// exactly "text", "tags", "filters" and "limit", each at most once; text null or a string
// without escapes; tags null or a list plainStrings accepts; filters null or an object with
// unescaped, distinct keys; limit an integer within MaxWireLimit. It reports false for
// anything else, which then takes UnmarshalJSON's encoding/json path; on success the result
// is the one that path gives.
func decodeQuery(data []byte) (Query, bool) {
	q := Query{Limit: DefaultLimit}
	i := skipWS(data, 0)
	if i == len(data) || data[i] != '{' {
		return q, false
	}
	const (
		hasText = 1 << iota
		hasTags
		hasFilters
		hasLimit
	)
	var seen int
	if i = skipWS(data, i+1); i < len(data) && data[i] == '}' {
		return q, skipWS(data, i+1) == len(data)
	}
	for {
		if i == len(data) || data[i] != '"' {
			return q, false
		}
		end, _, ok := scanString(data, i)
		if !ok {
			return q, false
		}
		key := data[i+1 : end-1]
		if i = skipWS(data, end); i == len(data) || data[i] != ':' {
			return q, false
		}
		vs := skipWS(data, i+1)
		if vs == len(data) {
			return q, false
		}
		var ve, field int
		switch string(key) {
		case "text":
			field = hasText
			switch data[vs] {
			case 'n':
				ve, ok = scanLiteral(data, vs, "null")
			case '"':
				if ve, _, ok = scanString(data, vs); ok && bytes.IndexByte(data[vs:ve], '\\') < 0 {
					s := string(data[vs+1 : ve-1])
					q.Text = &s
				} else {
					ok = false
				}
			default:
				ok = false
			}
		case "tags":
			field = hasTags
			if data[vs] == 'n' {
				ve, ok = scanLiteral(data, vs, "null")
			} else {
				q.Tags, ve, ok = plainStringsAt(data, vs, "", nil)
			}
		case "filters":
			field = hasFilters
			if data[vs] == 'n' {
				ve, ok = scanLiteral(data, vs, "null")
			} else {
				// The raw values share one copy of the object, which is all they slice.
				if ve, _, _, ok = scanValue(data, vs); ok {
					obj := bytes.Clone(data[vs:ve])
					q.Filters, _, ok = decodeRawObject(obj, obj, "", 0)
				}
			}
		case "limit":
			field = hasLimit
			if ve, ok = scanNumber(data, vs); ok {
				n, err := strconv.ParseInt(string(data[vs:ve]), 10, 64)
				ok = err == nil && n <= MaxWireLimit && n >= -MaxWireLimit
				q.Limit = int(n)
			}
		default:
			return q, false
		}
		if !ok || seen&field != 0 {
			return q, false
		}
		seen |= field
		switch i = skipWS(data, ve); {
		case i < len(data) && data[i] == ',':
			i = skipWS(data, i+1)
		case i < len(data) && data[i] == '}':
			return q, skipWS(data, i+1) == len(data)
		default:
			return q, false
		}
	}
}

// marshalQuerySlow is Query.MarshalJSON through encoding/json: the reference of
// appendQuery, and the path of everything it declines.
func marshalQuerySlow(q Query) ([]byte, error) {
	return json.Marshal(struct {
		Text    *string                    `json:"text"`
		Tags    []string                   `json:"tags"`
		Filters map[string]json.RawMessage `json:"filters"`
		Limit   int                        `json:"limit"`
	}{q.Text, q.Tags, q.Filters, q.Limit})
}

// UnmarshalQuery returns what json.Unmarshal(data, &q) gives, with the same errors, in one
// pass over a query of the common shape: json.Unmarshal checks the syntax, skips over the
// value and only then calls UnmarshalJSON, which reads it twice more. A body that is not
// valid JSON takes json.Unmarshal's path, for its syntax error.
func UnmarshalQuery(data []byte) (Query, error) {
	return unmarshalOnePass(data, decodeQuery, (*Query).unmarshalSlow)
}
