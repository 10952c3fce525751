package memoryadapter

import (
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
	v.mu.RLock()
	c, ok := v.words[s]
	v.mu.RUnlock()
	if ok {
		return c
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok := v.words[s]; ok {
		return c
	}
	if len(v.words) < vocabularyMax {
		v.words[s] = s
	}
	return s
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
	}
	return slim, nil
}
