package memoryadapter

import (
	"strconv"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	memoryv1alpha1 "github.com/agentmem/memory-adapter-operator/api/v1alpha1"
)

// vocabulary interns the short strings every cached adapter repeats: namespaces, condition
// types, statuses and reasons, conformance case and profile ids and outcomes. A decoder gives
// each of them storage of its own (an allocation of 8 to 48 bytes), about forty an adapter.
// It learns its words as it meets them, since the reasons are spread over several packages and
// namespaces are the cluster's, and stops learning at vocabularyMax words (or for words longer
// than vocabularyWordMax bytes), so a cluster with unbounded names costs it a bounded table.
type vocabulary struct {
	mu    sync.RWMutex
	words map[string]string
}

// vocabularyMax bounds the words a vocabulary learns; vocabularyWordMax the length of a word.
const (
	vocabularyMax     = 4096
	vocabularyWordMax = 64
)

// words is the manager's one vocabulary, shared by every cache transform.
var words = &vocabulary{words: map[string]string{}}

// intern returns the vocabulary's copy of s, learning s when it has room.
func (v *vocabulary) intern(s string) string {
	if s == "" || len(s) > vocabularyWordMax {
		return s
	}
	return learn(&v.mu, v.words, vocabularyMax, s, s)
}

// learn returns m's value for k, or, when m has none, stores v there if m holds fewer than limit
// values and returns v: the bounded table behind the vocabulary and the shared result lists.
// Most calls find k, so they take mu for reading only.
func learn[V any](mu *sync.RWMutex, m map[string]V, limit int, k string, v V) V {
	mu.RLock()
	c, ok := m[k]
	mu.RUnlock()
	if ok {
		return c
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

// slimAdapter is the cache transform of MemoryAdapters. It keeps every field (the controller
// reads the whole spec and status, and computes its status merge patch from the cached copy,
// so a field left out of the cache would be left out of that patch's base and written again
// every reconcile or, worse, lost), but holds them in less memory: a deep copy, whose slices
// are exactly as long as their contents where the decoder's appends may leave room to spare,
// in which the strings every adapter repeats are the vocabulary's and a condition's message
// that restates another's (Ready and Reconciling restate Available) shares its string. Every
// value stays equal, so nothing that reads or patches it can tell the difference.
func slimAdapter(obj any) (any, error) {
	ma, ok := obj.(*memoryv1alpha1.MemoryAdapter)
	if !ok {
		return obj, nil
	}
	ma.ManagedFields = nil
	slim := ma.DeepCopy()
	slim.Namespace = words.intern(slim.Namespace)
	conds := slim.Status.Conditions
	for i := range conds {
		c := &conds[i]
		c.Type, c.Reason = words.intern(c.Type), words.intern(c.Reason)
		c.Status = metav1.ConditionStatus(words.intern(string(c.Status)))
		for _, p := range conds[:i] {
			if p.Message == c.Message {
				c.Message = p.Message
				break
			}
		}
	}
	if res := slim.Status.Conformance; res != nil {
		for i := range res.Cases {
			c := &res.Cases[i]
			c.ID = memoryv1alpha1.ConformanceCaseID(words.intern(string(c.ID)))
			c.Outcome = memoryv1alpha1.ConformanceOutcome(words.intern(string(c.Outcome)))
		}
		for i := range res.Profiles {
			p := &res.Profiles[i]
			p.ID = memoryv1alpha1.ConformanceProfileID(words.intern(string(p.ID)))
			p.Outcome = memoryv1alpha1.ConformanceOutcome(words.intern(string(p.Outcome)))
		}
		res.Cases = caseLists.share(res.Cases)
		res.Profiles = profileLists.share(res.Profiles)
	}
	return slim, nil
}

// sharedLists holds one copy of each list of conformance results it has met, so that the
// adapters whose last runs ended alike (every case Passed, the same NotApplicable reasons: most
// adapters of a backend) refer to one list, about 900 bytes an adapter for the 17 cases. Sharing
// is safe because nothing writes to a cached adapter: the cache hands its readers deep copies,
// and the condition collector, which reads without copying, only reads. Bounded like the
// vocabulary: it stops learning at sharedListsMax lists, and lists whose key is longer than
// sharedListKeyMax bytes (long failure messages) are kept as they are.
type sharedLists[T any] struct {
	mu    sync.RWMutex
	lists map[string][]T
	key   func(T) string
}

// sharedListsMax bounds the lists a sharedLists learns; sharedListKeyMax the length of a key.
const (
	sharedListsMax   = 1024
	sharedListKeyMax = 4096
)

// caseLists and profileLists are the manager's shared lists of case and profile results.
var (
	caseLists = &sharedLists[memoryv1alpha1.ConformanceCaseResult]{lists: map[string][]memoryv1alpha1.ConformanceCaseResult{},
		key: func(c memoryv1alpha1.ConformanceCaseResult) string {
			return listKey(string(c.ID), string(c.Outcome), c.Message)
		}}
	profileLists = &sharedLists[memoryv1alpha1.ConformanceProfileResult]{lists: map[string][]memoryv1alpha1.ConformanceProfileResult{},
		key: func(p memoryv1alpha1.ConformanceProfileResult) string {
			return listKey(string(p.ID), string(p.Outcome), p.Message)
		}}
)

// listKey is one result's part of a list's key: its id and outcome (enums, never holding a
// NUL) and its message, length first, so that no two lists share a key.
func listKey(id, outcome, message string) string {
	return id + "\x00" + outcome + "\x00" + strconv.Itoa(len(message)) + "\x00" + message
}

// share returns the shared list equal to l, learning l when it has room; an empty l as it is.
func (s *sharedLists[T]) share(l []T) []T {
	if len(l) == 0 {
		return l
	}
	var b strings.Builder
	for _, v := range l {
		b.WriteString(s.key(v))
		if b.Len() > sharedListKeyMax {
			return l
		}
	}
	return learn(&s.mu, s.lists, sharedListsMax, b.String(), l)
}
