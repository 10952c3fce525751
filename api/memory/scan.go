package memory

import "unicode/utf8"

// The contract's raw values (content, metadata values, filters) must be valid JSON in valid
// UTF-8 wherever they cross the wire. encoding/json checks that with json.Valid or
// json.Compact, a state machine called through a function pointer for every byte, and
// utf8.Valid is one pass more; the decoders and encoders here check it with scanValue instead,
// in the same pass that finds where a value ends. Anything scanValue does not accept (an
// error, or nesting beyond maxScanDepth) goes back to encoding/json, which decides, so
// scanValue only has to be right about what it accepts: FuzzScanValue holds it to json.Valid
// and utf8.Valid on any input.

// scanFlags describe a value scanValue accepted.
type scanFlags uint8

const (
	// flagSpace: whitespace between tokens, which json.Compact would drop.
	flagSpace scanFlags = 1 << iota
	// flagHTML: <, > or &, or U+2028 or U+2029, inside a string: json.HTMLEscape would change
	// the bytes (escaped forms such as \u003c are already what it writes).
	flagHTML
)

// maxScanDepth is the nesting scanValue follows; a deeper value is left to encoding/json
// (whose own limit is 10,000). The contract's values nest at most MaxJSONDepth levels.
const maxScanDepth = 64

// byteClass sorts the bytes a string may hold: plain bytes are copied as they are.
var byteClass = func() (t [256]uint8) {
	const (
		plain = iota
		control
		quote
		backslash
		html
		multi // the lead or continuation byte of a multi-byte sequence
	)
	for c := range t {
		switch {
		case c < 0x20:
			t[c] = control
		case c == '"':
			t[c] = quote
		case c == '\\':
			t[c] = backslash
		case c == '<' || c == '>' || c == '&':
			t[c] = html
		case c >= utf8.RuneSelf:
			t[c] = multi
		default:
			t[c] = plain
		}
	}
	return t
}()

// The values of byteClass.
const (
	classPlain = iota
	classControl
	classQuote
	classBackslash
	classHTML
	classMulti
)

// scanString checks the string literal opening at data[i] (a '"') and returns the index just
// past its closing quote. Its bytes must be valid UTF-8 without control characters, and its
// escapes the ones RFC 8259 allows.
func scanString(data []byte, i int) (int, scanFlags, bool) {
	var flags scanFlags
	j := i + 1
	for j < len(data) {
		c := data[j]
		switch byteClass[c] {
		case classPlain:
			j++
		case classQuote:
			return j + 1, flags, true
		case classBackslash:
			if j+1 >= len(data) {
				return j, flags, false
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) || !isHex(data[j+2]) || !isHex(data[j+3]) || !isHex(data[j+4]) || !isHex(data[j+5]) {
					return j, flags, false
				}
				j += 6
			default:
				return j, flags, false
			}
		case classHTML:
			flags |= flagHTML
			j++
		case classMulti:
			r, size := utf8.DecodeRune(data[j:])
			if r == utf8.RuneError && size == 1 {
				return j, flags, false
			}
			if r == '\u2028' || r == '\u2029' {
				flags |= flagHTML
			}
			j += size
		default: // a control character
			return j, flags, false
		}
	}
	return j, flags, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// scanNumber checks the number literal starting at data[i] (RFC 8259 §6) and returns the
// index just past it; what follows is the caller's to check.
func scanNumber[T string | []byte](data T, i int) (int, bool) {
	digits := func(i int) int {
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		i = digits(i + 1)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

// scanLiteral checks that data[i:] starts with lit.
func scanLiteral(data []byte, i int, lit string) (int, bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanWS skips JSON whitespace from data[i], noting in flags that there was some.
func scanWS(data []byte, i int, flags *scanFlags) int {
	j := skipWS(data, i)
	if j != i {
		*flags |= flagSpace
	}
	return j
}

// scanValue checks the JSON value starting at data[i] (no whitespace before it) and returns
// the index just past it, and the deepest nesting of arrays and objects in it (JSONDepth's
// figure). It accepts exactly the values that are valid JSON (json.Valid) in valid UTF-8
// (utf8.Valid), nested at most maxScanDepth levels; what follows the value is the caller's to
// check. It does not allocate.
func scanValue(data []byte, i int) (end, depth int, flags scanFlags, ok bool) {
	// stack holds one bit per open container, 1 for an object.
	var stack uint64
	level, deepest := 0, 0
	for {
		// A value starts at data[i].
		if i >= len(data) {
			return i, deepest, flags, false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if level == maxScanDepth {
				return i, deepest, flags, false
			}
			stack = stack<<1 | boolBit(c == '{')
			level++
			deepest = max(deepest, level)
			i = scanWS(data, i+1, &flags)
			if i < len(data) && data[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				i++
				level--
				stack >>= 1
				break
			}
			if c == '{' {
				var ok bool
				if i, ok = scanKey(data, i, &flags); !ok {
					return i, deepest, flags, false
				}
			}
			continue
		case c == '"':
			var f scanFlags
			var ok bool
			if i, f, ok = scanString(data, i); !ok {
				return i, deepest, flags, false
			}
			flags |= f
		case c == '-' || c >= '0' && c <= '9':
			var ok bool
			if i, ok = scanNumber(data, i); !ok {
				return i, deepest, flags, false
			}
		case c == 't':
			var ok bool
			if i, ok = scanLiteral(data, i, "true"); !ok {
				return i, deepest, flags, false
			}
		case c == 'f':
			var ok bool
			if i, ok = scanLiteral(data, i, "false"); !ok {
				return i, deepest, flags, false
			}
		case c == 'n':
			var ok bool
			if i, ok = scanLiteral(data, i, "null"); !ok {
				return i, deepest, flags, false
			}
		default:
			return i, deepest, flags, false
		}
		// A value ended at data[i]: close containers until one continues with a comma.
		for {
			if level == 0 {
				return i, deepest, flags, true
			}
			i = scanWS(data, i, &flags)
			if i == len(data) {
				return i, deepest, flags, false
			}
			object := stack&1 == 1
			if data[i] == ',' {
				i = scanWS(data, i+1, &flags)
				if object {
					var ok bool
					if i, ok = scanKey(data, i, &flags); !ok {
						return i, deepest, flags, false
					}
				}
				break
			}
			if object && data[i] == '}' || !object && data[i] == ']' {
				i++
				level--
				stack >>= 1
				continue
			}
			return i, deepest, flags, false
		}
	}
}

// scanKey checks an object's key and colon starting at data[i] and returns the index of the
// value after them.
func scanKey(data []byte, i int, flags *scanFlags) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, f, ok := scanString(data, i)
	if !ok {
		return i, false
	}
	*flags |= f
	i = scanWS(data, i, flags)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return scanWS(data, i+1, flags), true
}

func boolBit(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
