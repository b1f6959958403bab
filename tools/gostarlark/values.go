package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

func pick(r *rand.Rand, from []string) string { return from[r.IntN(len(from))] }

// Pieces of strings: escapes JSON writes specially and text it leaves alone.
var pieces = []string{
	"a", "key", " ", "<", ">", "&", "\"", "\\", "/", "\n", "\t", "\r", "\b", "\f",
	"\x00", "\x01", "\x1f", "\x7f", "é", "日本", "\u2028", "\u2029", "\U0001F600", "\ufffd", "\u00a0",
}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	for i, n := 0, r.IntN(4); i < n; i++ {
		b.WriteString(pick(r, pieces))
	}
	return b.String()
}

// quote writes s as a Starlark string literal both interpreters read alike.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\n':
			b.WriteString("\\n")
		case c == '\t':
			b.WriteString("\\t")
		case c == '\r':
			b.WriteString("\\r")
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "\\x%02x", c)
		case c == '\u2028' || c == '\u2029' || c == '\u00a0' || c == '\ufffd':
			fmt.Fprintf(&b, "\\u%04x", c)
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func float(r *rand.Rand) string {
	var x float64
	switch r.IntN(4) {
	case 0:
		x = float64(r.Int64N(1<<62)) / float64(int64(1)<<r.IntN(12))
	case 1:
		x = (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(50)-25))
	case 2:
		x = float64(r.IntN(2001) - 1000)
	default:
		x = math.Float64frombits(r.Uint64())
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return pick(r, []string{`float("nan")`, `float("inf")`, `float("-inf")`})
		}
	}
	return "float(" + quote(strconv.FormatFloat(x, 'g', -1, 64)) + ")"
}

// value writes a Starlark expression for a value json.encode may be given.
func value(r *rand.Rand, depth int) string {
	kinds := 10
	if depth >= 3 {
		kinds = 7
	}
	switch r.IntN(kinds) {
	case 0:
		return "None"
	case 1:
		return pick(r, []string{"True", "False"})
	case 2:
		return strconv.FormatInt(r.Int64N(2_000_001)-1_000_000, 10) + pick(r, []string{"", "", " * 1000000000000000000000"})
	case 3:
		return float(r)
	case 4, 5, 6:
		return quote(randomString(r))
	case 7:
		items := make([]string, r.IntN(4))
		for i := range items {
			items[i] = value(r, depth+1)
		}
		if r.IntN(4) == 0 {
			if len(items) == 0 {
				return "()"
			}
			return "(" + strings.Join(items, ", ") + ",)"
		}
		return "[" + strings.Join(items, ", ") + "]"
	default:
		n := r.IntN(4)
		entries := make([]string, 0, n)
		seen := map[string]bool{}
		for i := 0; i < n; i++ {
			key := quote(randomString(r))
			if r.IntN(12) == 0 {
				key = strconv.Itoa(r.IntN(10))
			}
			// A repeated key is a static error, and not json's business.
			if !seen[key] {
				seen[key] = true
				entries = append(entries, key+": "+value(r, depth+1))
			}
		}
		return "{" + strings.Join(entries, ", ") + "}"
	}
}
