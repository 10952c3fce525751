package memory

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// The range of created_at: years 1 to 9999 in Unix seconds. Every backend can hold it, and a
// decoder never has to reason about an exponent beyond it.
const (
	// MinTimestamp is 0001-01-01T00:00:00Z in Unix seconds.
	MinTimestamp = -62135596800.0
	// MaxTimestamp is the end of year 9999 in Unix seconds. It is the double nearest to
	// 9999-12-31T23:59:59.999999Z, the last value the one-microsecond wire of earlier
	// versions wrote, so every item stored then stays readable.
	MaxTimestamp = 253402300800.0
)

// maxTimestampLiteral bounds a created_at literal: a double's shortest form is at most 24
// characters, so 64 leaves room for a client that writes a few digits more, and stops a
// decoder from being handed megabytes of digits.
const maxTimestampLiteral = 64

// TimestampInRange reports whether sec is a created_at every backend can hold: a number from
// MinTimestamp to MaxTimestamp, both included (NaN and the infinities are not).
func TimestampInRange(sec float64) bool {
	return sec >= MinTimestamp && sec <= MaxTimestamp
}

// SameTimestamp reports whether a and b are the same double, bit for bit: the contract's
// created_at equality (contract.md §3), under which 0.0 and -0.0 differ.
func SameTimestamp(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b)
}

// Timestamp returns t as a double of Unix seconds, as Python's time.time() gives it; the
// nanoseconds a time.Time carries beyond a double's precision are rounded away.
func Timestamp(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

// Now is the current time as a double of Unix seconds: lionagi's default created_at.
func Now() float64 { return Timestamp(time.Now()) }

// TimeOf returns sec as a UTC time, rounded to the nanosecond; use it for display and
// arithmetic, never to store or compare a created_at.
func TimeOf(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1e9))).UTC()
}

// FormatTimestamp writes sec as Python's repr(float) does: the shortest digits that parse back
// to the same double, with ".0" on a whole number and an exponent below 1e-4 or from 1e16 on.
// Any JSON parser reads it back to the same double, and a Python client decodes it as a float.
func FormatTimestamp(sec float64) string {
	return string(AppendTimestamp(nil, sec))
}

// AppendTimestamp appends FormatTimestamp(sec) to dst without allocating when dst has room;
// the server and client encode one per item.
func AppendTimestamp(dst []byte, sec float64) []byte {
	if abs := math.Abs(sec); abs != 0 && (abs < 1e-4 || abs >= 1e16) {
		return strconv.AppendFloat(dst, sec, 'e', -1, 64)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, sec, 'f', -1, 64)
	for _, c := range dst[start:] {
		if c == '.' {
			return dst
		}
	}
	return append(dst, '.', '0')
}

// ParseTimestamp parses a JSON number literal of Unix seconds to the nearest double, as every
// JSON parser of the contract's clients does. A literal another writer made with more digits than a double holds is
// rounded once, correctly, exactly as Python's json module would read it. The result is
// within [MinTimestamp, MaxTimestamp].
func ParseTimestamp(num string) (float64, error) {
	if len(num) > maxTimestampLiteral {
		return 0, errors.New("number literal too long")
	}
	// strconv also accepts "0x1p4", "Inf", "1_000" and a leading "+"; the wire allows JSON
	// numbers only, and a quoted number is a wrong type, not a timestamp.
	if !validNumberLiteral(num) {
		return 0, fmt.Errorf("not a JSON number: %q", truncate(num, 64))
	}
	if exponentTooLong(num) {
		return 0, errors.New("exponent out of range")
	}
	sec, err := strconv.ParseFloat(num, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("not a number: %q", truncate(num, 64))
	}
	// ErrRange is an overflow to ±Inf or an underflow to (signed) zero: the first is out of
	// range below, the second is the double the literal names.
	if !TimestampInRange(sec) {
		return 0, errors.New("timestamp out of range (years 1 to 9999)")
	}
	return sec, nil
}

// exponentTooLong reports whether num's exponent has more than three digits past its sign and
// leading zeros: no literal of at most maxTimestampLiteral characters lands in range then.
func exponentTooLong[T string | []byte](num T) bool {
	for i := 0; i < len(num); i++ {
		if num[i] == 'e' || num[i] == 'E' {
			j := i + 1
			for j < len(num) && (num[j] == '+' || num[j] == '-') {
				j++
			}
			for j < len(num) && num[j] == '0' {
				j++
			}
			return len(num)-j > 3
		}
	}
	return false
}

// parseTimestampLiteral is ParseTimestamp for num, a literal scanNumber accepted, when it
// succeeds, without allocating; false sends the literal to ParseTimestamp for its error.
func parseTimestampLiteral(num []byte) (float64, bool) {
	if len(num) > maxTimestampLiteral || exponentTooLong(num) {
		return 0, false
	}
	sec, err := strconv.ParseFloat(string(num), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return sec, TimestampInRange(sec)
}
