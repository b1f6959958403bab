// Records what the reference's json module (go.starlark.net/lib/json) gives
// for generated calls, for src/builtins/json.rs's tests:
//
//	go run . 3000 > ../../tests/compat/json.txt
//
// Each line is EXPRESSION<TAB>RESULT, where RESULT is go.starlark.net's
// repr of the value or "ERR: " and the error message. The expressions call
// json.encode, json.decode, json.indent and json.encode_indent on values
// and texts glued together from pieces that stress them. The seed is fixed.
package main

import (
	stdjson "encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gojson COUNT")
		os.Exit(2)
	}
	count, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	predeclared := starlark.StringDict{"json": json.Module}
	for i := 0; i < count; i++ {
		expr := call(r)
		thread := &starlark.Thread{Name: "vectors"}
		v, err := starlark.EvalOptions(&syntax.FileOptions{}, thread, "t.star", expr, predeclared)
		result := ""
		if err != nil {
			msg := err.Error()
			if e, ok := err.(*starlark.EvalError); ok {
				msg = e.Msg
			}
			result = "ERR: " + msg
		} else {
			result = v.String()
		}
		if strings.ContainsAny(expr+result, "\t\n") {
			panic("a vector must fit on one line: " + expr)
		}
		fmt.Printf("%s\t%s\n", expr, result)
	}
}

func call(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0, 1:
		return "json.encode(" + value(r, 0) + ")"
	case 2, 3:
		return "json.decode(" + quote(jsonText(r)) + ")"
	case 4:
		return "json.indent(" + quote(jsonText(r)) + ", prefix = " + quote(pick(r, spaces)) + ", indent = " + quote(pick(r, spaces)) + ")"
	default:
		return "json.encode_indent(" + value(r, 0) + ", indent = " + quote(pick(r, spaces)) + ")"
	}
}

var spaces = []string{"", " ", "  ", "\\t", "-", ">"}

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

// Pieces of JSON text, valid and not.
var jsonPieces = []string{
	"{", "}", "[", "]", ",", ":", " ", "\n", "\t", "\r", "\"a\"", "\"\"", "\"\\u00e9\"", "\"\\ud83d\\ude00\"",
	"\"\\ud800\"", "\"\\n\\t\\\"\\\\\\/\"", "\"\\x\"", "\"é\"", "\"<&>\"", "\"\x01\"", "\"",
	"0", "-0", "1", "-1", "12", "01", "1.5", "-1.5e3", "1e400", "1E2", "1.", ".5", "-", "+1", "123456789012345678901234567890",
	"1.0", "1e-7", "100", "true", "false", "null", "nul", "tru", "x",
}

func jsonText(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		// A well-formed document, by way of a value.
		return wellFormed(r, 0)
	}
	var b strings.Builder
	for i, n := 0, 1+r.IntN(8); i < n; i++ {
		b.WriteString(pick(r, jsonPieces))
	}
	return b.String()
}

func wellFormed(r *rand.Rand, depth int) string {
	kinds := 6
	if depth >= 3 {
		kinds = 4
	}
	switch r.IntN(kinds) {
	case 0:
		return pick(r, []string{"null", "true", "false"})
	case 1:
		return pick(r, []string{"0", "-0", "1", "-7", "1.5", "1e2", "-1.5e-3", "100", "1.0", "123456789012345678901234567890", "0.1"})
	case 2, 3:
		return jsonString(randomString(r))
	case 4:
		items := make([]string, r.IntN(4))
		for i := range items {
			items[i] = wellFormed(r, depth+1)
		}
		return "[" + strings.Join(items, pick(r, []string{",", ", ", " ,\n"})) + "]"
	default:
		n := r.IntN(4)
		entries := make([]string, 0, n)
		for i := 0; i < n; i++ {
			entries = append(entries, jsonString(pick(r, []string{"a", "b", "é", "a", ""}))+":"+wellFormed(r, depth+1))
		}
		return "{" + strings.Join(entries, ",") + "}"
	}
}

func jsonString(s string) string {
	b, err := stdjson.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
