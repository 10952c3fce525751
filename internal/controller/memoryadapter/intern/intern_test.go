package intern

import (
	"fmt"
	"testing"
	"unsafe"
)

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestVocabularyStopsLearningAtItsBound(t *testing.T) {
	v := NewVocabulary(16, 8)
	for i := range 20 {
		v.Intern(fmt.Sprintf("word-%d", i))
	}
	if v.Len() != 16 {
		t.Errorf("learnt %d words, want at most 16", v.Len())
	}
	known := string([]byte("word-1"))
	if !sameString(v.Intern(known), v.words["word-1"]) || sameString(known, v.words["word-1"]) {
		t.Error("a known word is not the vocabulary's copy")
	}
	late := string([]byte("word-18"))
	if got := v.Intern(late); !sameString(got, late) || v.Knows(late) {
		t.Error("a word past the bound is not returned as it came")
	}
	long := "ninebytes"
	if v.Intern(long); v.Knows(long) {
		t.Error("learnt a word longer than the word bound")
	}
	if v.Intern("") != "" || v.Knows("") {
		t.Error("learnt the empty string")
	}
}

func TestListsShareEqualListsUpToTheBound(t *testing.T) {
	s := NewLists(func(v string) string { return v + "\x00" })
	a, b := s.Share([]string{"x", "y"}), s.Share([]string{"x", "y"})
	if &a[0] != &b[0] {
		t.Error("equal lists are held twice")
	}
	if c := s.Share([]string{"xy"}); &c[0] == &a[0] || c[0] != "xy" {
		t.Error("lists that differ were shared")
	}
	for i := range ListsMax + 10 {
		s.Share([]string{fmt.Sprint(i)})
	}
	if s.Len() != ListsMax {
		t.Errorf("learned %d lists, want the bound %d", s.Len(), ListsMax)
	}
	long := []string{string(make([]byte, ListKeyMax+1))}
	if got := s.Share(long); &got[0] != &long[0] || s.Len() != ListsMax {
		t.Error("a list with a key past the bound was not returned as it was")
	}
	if got := s.Share(nil); got != nil {
		t.Errorf("an empty list became %v", got)
	}
}

// settings stands for a kind with optional fields: a nil pointer and a pointer to the zero
// value are different settings.
type settings struct {
	Safe *bool  `json:"safe,omitempty"`
	Mode string `json:"mode,omitempty"`
}

// Equal settings are one value; settings that differ anywhere, a nil pointer included, are
// their own.
func TestValuesShareOnlyEqualSettings(t *testing.T) {
	s := NewValues[settings]()
	yes, no := true, false
	a, b := &settings{Safe: &yes}, &settings{Safe: &yes}
	if s.Share(a) != s.Share(b) {
		t.Error("equal settings are held twice")
	}
	for _, other := range []*settings{{Safe: &no}, {}, {Safe: &yes, Mode: "m"}} {
		if got := s.Share(other); got != other {
			t.Errorf("%+v shared with another value: %+v", other, got)
		}
	}
	if s.Share(nil) != nil {
		t.Error("nil settings became a value")
	}
}
