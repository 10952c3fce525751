package memory

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors let callers classify failures with errors.Is without knowing the concrete
// type. Every adapter failure matches ErrAdapter; the two refinements match their own
// sentinel as well.
var (
	// ErrAdapter matches every explicit adapter operation failure.
	ErrAdapter = errors.New("memory adapter error")
	// ErrUnsupportedQuery matches a query the adapter refuses rather than broaden or narrow.
	ErrUnsupportedQuery = errors.New("unsupported memory query")
	// ErrUnavailable matches a transport or service availability failure.
	ErrUnavailable = errors.New("memory adapter unavailable")
)

// MemoryAdapterError is the base failure of an explicit store, retrieve or search call
// (the seed's MemoryAdapterError). The native cause stays reachable through Unwrap.
type MemoryAdapterError struct {
	// Message says what failed, without secrets.
	Message string
	// Err is the native cause, if any.
	Err error
}

// NewAdapterError returns a MemoryAdapterError with the given message and native cause.
func NewAdapterError(message string, cause error) *MemoryAdapterError {
	return &MemoryAdapterError{Message: message, Err: cause}
}

// Error implements error.
func (e *MemoryAdapterError) Error() string {
	return joinMessage("memory adapter error", e.Message, e.Err)
}

// Unwrap returns the native cause.
func (e *MemoryAdapterError) Unwrap() error { return e.Err }

// Is reports whether target is ErrAdapter.
func (e *MemoryAdapterError) Is(target error) bool { return target == ErrAdapter }

// UnsupportedMemoryQuery reports query keys the adapter does not support (the seed's
// UnsupportedMemoryQuery). RejectedKeys is sorted and unique; "limit" names a negative limit.
type UnsupportedMemoryQuery struct {
	// RejectedKeys are the refused keys, sorted and unique.
	RejectedKeys []string
}

// NewUnsupportedQuery returns an UnsupportedMemoryQuery whose keys are sorted and unique.
func NewUnsupportedQuery(keys ...string) *UnsupportedMemoryQuery {
	k := slices.Clone(keys)
	slices.Sort(k)
	return &UnsupportedMemoryQuery{RejectedKeys: slices.Compact(k)}
}

// Error implements error with the seed's message.
func (e *UnsupportedMemoryQuery) Error() string {
	return "unsupported memory query keys: " + strings.Join(e.RejectedKeys, ", ")
}

// Is reports whether target is ErrUnsupportedQuery or ErrAdapter.
func (e *UnsupportedMemoryQuery) Is(target error) bool {
	return target == ErrUnsupportedQuery || target == ErrAdapter
}

// As lets errors.As find an UnsupportedMemoryQuery as a *MemoryAdapterError, mirroring the
// seed's class hierarchy.
func (e *UnsupportedMemoryQuery) As(target any) bool {
	if t, ok := target.(**MemoryAdapterError); ok {
		*t = &MemoryAdapterError{Message: e.Error()}
		return true
	}
	return false
}

// MemoryAdapterUnavailable reports that transport or service availability prevented an
// explicit operation (the seed's MemoryAdapterUnavailable). It never stands for "not found".
type MemoryAdapterUnavailable struct {
	// Message says what was unavailable, without secrets.
	Message string
	// Err is the native cause, if any.
	Err error
}

// NewUnavailable returns a MemoryAdapterUnavailable with the given message and native cause.
func NewUnavailable(message string, cause error) *MemoryAdapterUnavailable {
	return &MemoryAdapterUnavailable{Message: message, Err: cause}
}

// Error implements error.
func (e *MemoryAdapterUnavailable) Error() string {
	return joinMessage("memory adapter unavailable", e.Message, e.Err)
}

// Unwrap returns the native cause.
func (e *MemoryAdapterUnavailable) Unwrap() error { return e.Err }

// Is reports whether target is ErrUnavailable or ErrAdapter.
func (e *MemoryAdapterUnavailable) Is(target error) bool {
	return target == ErrUnavailable || target == ErrAdapter
}

// As lets errors.As find a MemoryAdapterUnavailable as a *MemoryAdapterError.
func (e *MemoryAdapterUnavailable) As(target any) bool {
	if t, ok := target.(**MemoryAdapterError); ok {
		*t = &MemoryAdapterError{Message: e.Error(), Err: e.Err}
		return true
	}
	return false
}

func joinMessage(prefix, message string, cause error) string {
	var b strings.Builder
	b.WriteString(prefix)
	if message != "" {
		b.WriteString(": ")
		b.WriteString(message)
	}
	if cause != nil {
		b.WriteString(": ")
		b.WriteString(cause.Error())
	}
	return b.String()
}

// ServerProblem is an error that carries an adapter server's problem answer and its
// Retry-After (zero when absent): the cause a wire client chains under the typed error, so
// that code past the client (the conformance profiles, an agent backing off) can tell a
// 403 forbidden, a 507 quota_exceeded or a 429 rate_limited apart without parsing messages.
type ServerProblem interface {
	error
	// ServerProblem returns the decoded problem and the answer's Retry-After.
	ServerProblem() (Problem, time.Duration)
}

// ProblemOf returns the server problem err carries anywhere in its chain.
func ProblemOf(err error) (Problem, time.Duration, bool) {
	var sp ServerProblem
	if errors.As(err, &sp) {
		p, ra := sp.ServerProblem()
		return p, ra, true
	}
	return Problem{}, 0, false
}

// RetryAfterHeader parses a Retry-After header's delay-seconds form, bounded to a day; an
// absent or other form (an HTTP date, which the adapter server never sends) is zero.
func RetryAfterHeader(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(min(n, 86400)) * time.Second
}
