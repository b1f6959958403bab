// Records what the reference's YAML library (sigs.k8s.io/yaml over go-yaml
// v2) makes of generated and hand-written inputs, as JSON lines that
// src/builtins/yaml checks yaml.decode and yaml.encode against.
//
//	go run . decode CASES COUNT > ../../tests/yaml/vectors.jsonl
//	go run . encode COUNT > ../../tests/yaml/encode.jsonl
//	go run . serve
//
// decode: YAMLToJSON of each input in CASES (one JSON string per line; blank
// lines and lines starting with '#' are skipped) and of COUNT inputs glued
// together from fragments that stress the scanner.
//
// encode: Marshal (JSON, then YAML) of COUNT generated values, the way the
// reference's yaml.encode writes a Starlark value; the value is recorded as
// the JSON text json.Marshal gives for it.
//
// Both generators start from fixed seeds, so a run gives the same file.
//
// serve: answers the fuzz targets one input at a time (serve.go), a
// request {"decode": YAML} with the decode vector of YAML and
// {"encode": JSON} with the encode vector of the value JSON holds.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		serve(answer)
		return
	}
	if len(os.Args) < 3 {
		usage()
	}
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	switch os.Args[1] {
	case "decode":
		if len(os.Args) != 4 {
			usage()
		}
		for _, input := range readCases(os.Args[2]) {
			emit(out, decodeVector(input))
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < count(os.Args[3]); i++ {
			emit(out, decodeVector(randomYAML(r)))
		}
	case "encode":
		r := rand.New(rand.NewPCG(3, 4))
		for i := 0; i < count(os.Args[2]); i++ {
			emit(out, encodeVector(randomValue(r, 0)))
		}
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: goyaml decode CASES COUNT | goyaml encode COUNT | goyaml serve")
	os.Exit(2)
}

func count(arg string) int {
	n, err := strconv.Atoi(arg)
	if err != nil {
		usage()
	}
	return n
}

func emit(out *json.Encoder, v any) {
	if err := out.Encode(v); err != nil {
		panic(err)
	}
}

// A yaml.decode vector: the input and the JSON text or error it gives.
type decoded struct {
	YAML  string  `json:"yaml"`
	JSON  *string `json:"json,omitempty"`
	Error *string `json:"error,omitempty"`
}

func decodeVector(input string) decoded {
	v := decoded{YAML: input}
	j, err := yaml.YAMLToJSON([]byte(input))
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	} else {
		text := string(j)
		v.JSON = &text
	}
	return v
}

// A request of serve: one of the two is set.
type request struct {
	Decode *string `json:"decode"`
	Encode *string `json:"encode"`
}

func answer(r request) any {
	if r.Decode != nil {
		return decodeVector(*r.Decode)
	}
	// sigs.k8s.io/yaml's Marshal is JSONToYAML of the value's JSON.
	v := encoded{JSON: *r.Encode}
	y, err := yaml.JSONToYAML([]byte(*r.Encode))
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	} else {
		text := strings.TrimRight(string(y), "\n")
		v.YAML = &text
	}
	return v
}

// A yaml.encode vector: the value as JSON and the YAML or error it gives.
type encoded struct {
	JSON  string  `json:"json"`
	YAML  *string `json:"yaml,omitempty"`
	Error *string `json:"error,omitempty"`
}

func encodeVector(value any) encoded {
	j, err := json.Marshal(value)
	if err != nil {
		panic(err)
	}
	v := encoded{JSON: string(j)}
	y, err := yaml.Marshal(value)
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	} else {
		// yaml.encode strips every trailing newline.
		text := strings.TrimRight(string(y), "\n")
		v.YAML = &text
	}
	return v
}

func readCases(path string) []string {
	file, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer file.Close()
	var cases []string
	lines := bufio.NewScanner(file)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var input string
		if err := json.Unmarshal([]byte(line), &input); err != nil {
			panic(fmt.Sprintf("%s: %v", line, err))
		}
		cases = append(cases, input)
	}
	if err := lines.Err(); err != nil {
		panic(err)
	}
	return cases
}

// Pieces of YAML text; random inputs are short sequences of them.
var fragments = []string{
	"a", "b: ", "key: ", "- ", "-", ":", ": ", "? ", ",", ", ", "[", "]", "{", "}",
	"\n", "\n", "\n", "\n  ", "\n    ", "  ", " ", "\t", "\r\n", "#c", " # note",
	"\"", "\"dq\"", "\"a\nb\"", "\"x\\n\\t\\u00e9\"", "\"\\q\"", "'", "'sq'", "'it''s'", "'a\n\n b'",
	"|", "|-", "|+", ">", ">-", "|2", "\n  text\n", "\n   more",
	"&a ", "*a", "&b ", "*b", "<<: ", "<<: *a", "!!str ", "!!int ", "!!float ", "!!binary ", "!!bool ", "!t ", "!", "!!map ", "!!seq ",
	"1", "-1", "0x1F", "0o17", "017", "1_000", "1e3", "1.5", ".inf", "-.Inf", ".nan", "1:20", "9223372036854775808", "0b101",
	"yes", "No", "on", "OFF", "y", "~", "null", "true", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
	"---", "...", "--- ", "%YAML 1.1\n", "%TAG !e! tag:e.com,2000:\n", "\u0085", "\u2028", "\u2029", "\ufeff",
	"x:y", "a b", "@", "`", "%", "é", "ü: ö",
}

func randomYAML(r *rand.Rand) string {
	var b strings.Builder
	n := 2 + r.IntN(12)
	for i := 0; i < n; i++ {
		b.WriteString(fragments[r.IntN(len(fragments))])
	}
	return b.String()
}

// Pieces of strings that decide a scalar's style when written as YAML.
var words = []string{
	"a", "web", "value", "x y", " ", "  ", "\n", "\n\n", "\t", "\r", ":", ": ", " #", "#", "-", "- ",
	"?", "[", "]", "{", "}", ",", "&", "*", "!", "|", ">", "'", "\"", "%", "@", "`", "\\",
	"yes", "No", "on", "y", "~", "null", "true", "123", "1.5", "0x1F", "1:20", "1e3", ".inf", "2001-12-14",
	"é", "日本", "\u0085", "\u2028", "\u00a0", "\ufeff", "\x01", "\x7f", "\U0001F600",
	"---", "...", "<<", "a2", "a10", "A", "_", "0", "-1",
	"a rather long piece of text with spaces that pushes the line over eighty columns",
}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	n := r.IntN(5)
	for i := 0; i < n; i++ {
		b.WriteString(words[r.IntN(len(words))])
	}
	return b.String()
}

func randomValue(r *rand.Rand, depth int) any {
	kinds := 9
	if depth >= 4 {
		kinds = 7
	}
	switch r.IntN(kinds) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return r.Int64N(2_000_001) - 1_000_000
	case 3:
		// Non-integral floats over a wide range of magnitudes.
		return (r.Float64() - 0.5) * float64(int64(1)<<r.IntN(60)) / float64(int64(1)<<r.IntN(40))
	case 4, 5, 6:
		return randomString(r)
	case 7:
		items := make([]any, r.IntN(4))
		for i := range items {
			items[i] = randomValue(r, depth+1)
		}
		return items
	default:
		m := map[string]any{}
		for i, n := 0, r.IntN(5); i < n; i++ {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	}
}
