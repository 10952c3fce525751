package memory

import (
	"fmt"
	"regexp"
	"strings"
)

// The limits shared by the wire, the server and every backend. They live here, once, so that
// a value the server accepts is a value every backend can store, and the CRD's markers are
// pinned to them by a test (api/v1alpha1/limits_test.go) instead of being copied by hand.
const (
	// MaxItemBytes bounds the encoded size of one item (content, metadata and tags). It is far
	// above what an agent memory needs and far below what would let one caller exhaust a
	// backend's memory or a statement's size limit.
	MaxItemBytes = 1 << 20
	// MaxEnvelopeBytes is the room a request body needs around the largest item: the field
	// names, the id and timestamp, quoting and separators of up to MaxMetadataKeys keys and
	// MaxTagsPerItem tags.
	MaxEnvelopeBytes = 64 << 10
	// MaxRequestBytes bounds a request body on the wire, derived from MaxItemBytes so that the
	// largest storable item is reachable over HTTP.
	MaxRequestBytes = MaxItemBytes + MaxEnvelopeBytes
	// MaxTagsPerItem bounds an item's tag list; each tag is one index entry in the backends.
	MaxTagsPerItem = 4096
	// MaxTagBytes bounds one tag, which backends use as (part of) an index key.
	MaxTagBytes = 4096
	// MaxMetadataKeys bounds an item's metadata object.
	MaxMetadataKeys = 1024
	// MaxQueryTags bounds a query's tag list: each tag becomes one bound statement parameter
	// or one index lookup, so a caller must not be able to ask for an unbounded amount.
	MaxQueryTags = 1024
	// MaxQueryTextBytes bounds a query's substring.
	MaxQueryTextBytes = 64 << 10
	// MaxAdapterIDLength bounds a manifest's adapter id (a DNS subdomain's length).
	MaxAdapterIDLength = 253
	// MaxFilterKeyLength bounds one supported filter key, in bytes.
	MaxFilterKeyLength = 256
	// MaxSupportedFilters bounds a manifest's supported filter key set.
	MaxSupportedFilters = 64
	// MaxScopeLength bounds a scope name; scopes are identifiers, not payloads, and one fits
	// in a Kubernetes label value.
	MaxScopeLength = 63
	// ScopePattern is the syntax of a scope: lower-case letters, digits, '_', '-' and '.',
	// starting with a letter. It is safe as part of a Redis key, a SQL literal, a file name
	// and a log line, so no backend needs its own escaping or its own rule.
	ScopePattern = `^[a-z][a-z0-9_.-]*$`
	// SubScopeSeparator joins a scope and one of its sub-scopes (SubScope). It is outside
	// ScopePattern's alphabet, so no scope a user names can equal or start like another
	// scope's sub-scope, and a purge of a scope can find its sub-scopes by prefix.
	SubScopeSeparator = "~"
	// MaxSubScopeLength bounds a sub-scope's own name: a ServiceAccount's name fits when it
	// is a DNS label.
	MaxSubScopeLength = 63
	// SubScopePattern is the syntax of a sub-scope's own name: a ServiceAccount name's
	// alphabet (lower-case letters, digits, '-' and '.'), starting and ending alphanumeric.
	SubScopePattern = `^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`
)

var (
	scopeRE    = regexp.MustCompile(ScopePattern)
	subScopeRE = regexp.MustCompile(SubScopePattern)
)

// SubScope names the sub-scope sub of scope: a scope of its own to every backend (its items
// are invisible from scope and from every other sub-scope), whose name says whose it is.
func SubScope(scope, sub string) (string, error) {
	if err := checkBaseScope(scope); err != nil {
		return "", err
	}
	if err := CheckSubScopeName(sub); err != nil {
		return "", err
	}
	return scope + SubScopeSeparator + sub, nil
}

// CheckSubScopeName reports whether sub is a valid sub-scope name: 1 to MaxSubScopeLength
// bytes matching SubScopePattern.
func CheckSubScopeName(sub string) error {
	if sub == "" || len(sub) > MaxSubScopeLength {
		return fmt.Errorf("sub-scope must be 1 to %d characters", MaxSubScopeLength)
	}
	if !subScopeRE.MatchString(sub) {
		return fmt.Errorf("sub-scope %q must match %s", sub, SubScopePattern)
	}
	return nil
}

// CheckScope reports whether scope is a valid scope name: 1 to MaxScopeLength bytes matching
// ScopePattern, or such a scope and a sub-scope joined by SubScopeSeparator (SubScope).
func CheckScope(scope string) error {
	if base, sub, ok := strings.Cut(scope, SubScopeSeparator); ok {
		if err := checkBaseScope(base); err != nil {
			return err
		}
		return CheckSubScopeName(sub)
	}
	return checkBaseScope(scope)
}

func checkBaseScope(scope string) error {
	if scope == "" || len(scope) > MaxScopeLength {
		return fmt.Errorf("scope must be 1 to %d characters", MaxScopeLength)
	}
	if !scopeRE.MatchString(scope) {
		return fmt.Errorf("scope %q must match %s", scope, ScopePattern)
	}
	return nil
}

// CheckItemLimits rejects an item over the count and length limits (tags, tag length,
// metadata keys) with a *MemoryAdapterError, before any I/O. The encoded size is measured by
// each backend against MaxItemBytes, since only it knows the form it writes.
func CheckItemLimits(item Item) error {
	if len(item.Tags) > MaxTagsPerItem {
		return NewAdapterError(fmt.Sprintf("store: more than %d tags", MaxTagsPerItem), nil)
	}
	for _, t := range item.Tags {
		if len(t) > MaxTagBytes {
			return NewAdapterError(fmt.Sprintf("store: a tag is longer than %d bytes", MaxTagBytes), nil)
		}
	}
	if len(item.Metadata) > MaxMetadataKeys {
		return NewAdapterError(fmt.Sprintf("store: more than %d metadata keys", MaxMetadataKeys), nil)
	}
	return nil
}

// ItemTooLarge is the one error every adapter returns for an item whose encoded size is over
// its limit (MaxItemBytes unless configured lower), so that callers and documentation meet
// one message.
func ItemTooLarge(limit int) error {
	return NewAdapterError(fmt.Sprintf("store: item larger than %d bytes", limit), nil)
}

// CheckItemSize rejects, with ItemTooLarge, an item whose content, metadata keys and values
// and tags (each counted with its quotes and separator) exceed limit bytes as given; a
// backend that stores a compacted form measures that form instead, with the same message.
func CheckItemSize(item Item, limit int) error {
	if ItemSize(item) > int64(limit) {
		return ItemTooLarge(limit)
	}
	return nil
}

// CheckQueryLimits rejects a query over the text and tag limits with a *MemoryAdapterError,
// before any I/O.
func CheckQueryLimits(q Query) error {
	if q.Text != nil && len(*q.Text) > MaxQueryTextBytes {
		return NewAdapterError(fmt.Sprintf("search: text longer than %d bytes", MaxQueryTextBytes), nil)
	}
	if len(q.Tags) > MaxQueryTags {
		return NewAdapterError(fmt.Sprintf("search: more than %d tags", MaxQueryTags), nil)
	}
	return nil
}
