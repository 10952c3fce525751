package requirements

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzParse feeds hostile annotations to the parser. Properties: it never panics; an error is
// always a *SyntaxError whose offset lies within the input and whose token is at most 64
// bytes; whatever parses writes a canonical form that parses back to the same requirements;
// and Unmet never panics on what parsed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "searchConsistency=immediate", "retrieveFidelity>=native_fields, searchFidelity>=full",
		"searchReturnsTags,preservesMetadata", "supportedFilters=a+b+a", "nativeItemFields=id+tags",
		",", "=", ">=", "searchConsistency==immediate", "supportedFilters=+", "x\x00y", "\xff=\xfe",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a *SyntaxError: %v", err)
			}
			if se.Offset < 0 || se.Offset > len(s) || len(se.Token) > 64 {
				t.Fatalf("offset %d or token %q out of bounds for %q", se.Offset, se.Token, s)
			}
			return
		}
		again, err := Parse(r.String())
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", r.String(), s, err)
		}
		if !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip changed %q: %#v != %#v", s, again, r)
		}
		_ = r.Unmet(redisLike())
	})
}
