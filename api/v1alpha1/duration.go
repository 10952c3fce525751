package v1alpha1

import (
	"fmt"
	"time"
)

// Duration is a Go duration string such as "500ms", "30s" or "1h30m":
// unsigned decimal numbers, each with a unit of ns, us (or µs), ms, s, m
// or h. Fields of this type also carry CEL bounds.
// +kubebuilder:validation:MinLength=2
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ns|us|µs|ms|s|m|h))+$`
type Duration string

// NewDuration formats d the way the API stores it.
func NewDuration(d time.Duration) *Duration {
	s := Duration(d.String())
	return &s
}

// Parse returns the duration as a time.Duration. The schema admits only
// strings that parse, but status and clients can be written by other code,
// so the error is still reported.
func (d Duration) Parse() (time.Duration, error) {
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: %w", truncateForError(string(d)), err)
	}
	if v < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", truncateForError(string(d)))
	}
	return v, nil
}

// Or returns the parsed duration, or def when d is nil or does not parse.
// The controller uses it for optional spec fields whose defaults come from
// the backend adapter.
func (d *Duration) Or(def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	v, err := d.Parse()
	if err != nil {
		return def
	}
	return v
}

func truncateForError(s string) string {
	const limit = 40
	if len(s) <= limit {
		return s
	}
	return s[:limit] + "…"
}
