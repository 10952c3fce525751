package intern

import (
	"encoding/json"
	"strings"
	"sync"
)

// Vocabulary interns strings. It learns its words as it meets them and stops learning at
// its bound (or for words longer than its word bound).
type Vocabulary struct {
	mu           sync.RWMutex
	words        map[string]string
	max, wordMax int
}

// Bounds of Words, the manager's vocabulary.
const (
	// VocabularyMax bounds the words Words learns.
	VocabularyMax = 4096
	// VocabularyWordMax bounds the length of a word Words learns, in bytes: enough for a
	// manifest hash, a version, a reason or a message that names no object.
	VocabularyWordMax = 128
)

// Words is the manager's one vocabulary, shared by every cache transform and the prober:
// namespaces, condition types, statuses, reasons and the messages that name no adapter,
// conformance case and profile ids and outcomes, the manifest's words and its hash (three
// times in a status), service and adapter versions, lifecycle settings, evidence probes.
var Words = NewVocabulary(VocabularyMax, VocabularyWordMax)

// NewVocabulary is an empty vocabulary of at most max words of at most wordMax bytes.
func NewVocabulary(max, wordMax int) *Vocabulary {
	return &Vocabulary{words: map[string]string{}, max: max, wordMax: wordMax}
}

// Intern returns the vocabulary's copy of s, learning s when it has room.
func (v *Vocabulary) Intern(s string) string {
	if s == "" || len(s) > v.wordMax {
		return s
	}
	return learn(&v.mu, v.words, v.max, s, s)
}

// Knows says whether the vocabulary has learnt s.
func (v *Vocabulary) Knows(s string) bool {
	v.mu.RLock()
	defer v.mu.RUnlock()
	_, ok := v.words[s]
	return ok
}

// Len is how many words the vocabulary has learnt.
func (v *Vocabulary) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.words)
}

// learn returns m's value for k, or, when m has none, stores v there if m holds fewer than
// limit values and returns v: the bounded table behind every table here. Most calls find k,
// and once the table is full every call that does not learns nothing, so both take mu for
// reading only.
func learn[V any](mu *sync.RWMutex, m map[string]V, limit int, k string, v V) V {
	mu.RLock()
	c, ok := m[k]
	full := len(m) >= limit
	mu.RUnlock()
	if ok {
		return c
	}
	if full {
		return v
	}
	mu.Lock()
	defer mu.Unlock()
	if c, ok := m[k]; ok {
		return c
	}
	if len(m) < limit {
		m[k] = v
	}
	return v
}

// Bounds of a Lists and a Values.
const (
	// ListsMax bounds the lists (or values) a table learns.
	ListsMax = 1024
	// ListKeyMax bounds the length of a list's (or value's) key, in bytes: a longer one (a
	// list of long failure messages) is kept as it is.
	ListKeyMax = 4096
)

// Lists holds one copy of each list it has met, so that the objects holding equal lists (the
// adapters whose last runs ended alike, the pods with the same containers) refer to one.
type Lists[T any] struct {
	mu    sync.RWMutex
	lists map[string][]T
	key   func(T) string
}

// NewLists is an empty table of lists whose elements key gives their part of a list's key.
// key must tell apart any two elements that differ, and two lists must not give the same
// key by running their elements' keys together (end each key with a separator no field
// holds, or start it with its length).
func NewLists[T any](key func(T) string) *Lists[T] {
	return &Lists[T]{lists: map[string][]T{}, key: key}
}

// Share returns the shared list equal to l, learning l when it has room; an empty l as it is.
func (s *Lists[T]) Share(l []T) []T {
	if len(l) == 0 {
		return l
	}
	var b strings.Builder
	for _, v := range l {
		b.WriteString(s.key(v))
		if b.Len() > ListKeyMax {
			return l
		}
	}
	return learn(&s.mu, s.lists, ListsMax, b.String(), l)
}

// Len is how many lists the table has learnt.
func (s *Lists[T]) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.lists)
}

// Values holds one copy of each value it has met, compared by their JSON, so that the
// objects with equal settings (the lifecycle every adapter of a backend is given) refer to
// one. T's JSON must tell apart any two values that differ (no field left out of it).
type Values[T any] struct {
	mu     sync.RWMutex
	values map[string]*T
}

// NewValues is an empty table of values.
func NewValues[T any]() *Values[T] { return &Values[T]{values: map[string]*T{}} }

// Share returns the shared value equal to v, learning v when it has room; nil as it is.
func (s *Values[T]) Share(v *T) *T {
	if v == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil || len(b) > ListKeyMax {
		return v
	}
	return learn(&s.mu, s.values, ListsMax, string(b), v)
}
