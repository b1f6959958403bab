package main

import (
	stdjson "encoding/json"
	"math/rand/v2"
	"strings"
)

func jsonCall(r *rand.Rand) string {
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
