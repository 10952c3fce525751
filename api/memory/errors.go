package memory

import (
	"errors"
	"slices"
	"strings"
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
