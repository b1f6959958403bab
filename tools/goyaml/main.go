// Records what the reference's YAML decoding (sigs.k8s.io/yaml's YAMLToJSON
// over go-yaml v2) makes of each input, as JSON lines for tests/yaml.rs.
//
// Usage: go run . CASES [RANDOM_COUNT] > ../../tests/yaml/vectors.jsonl
//
// CASES holds one JSON string per line (blank lines and lines starting with
// '#' are skipped). RANDOM_COUNT more inputs are generated from a fixed seed
// by gluing together fragments that stress the scanner.
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

type vector struct {
	YAML  string  `json:"yaml"`
	JSON  *string `json:"json,omitempty"`
	Error *string `json:"error,omitempty"`
}

func record(out *json.Encoder, input string) {
	v := vector{YAML: input}
	j, err := yaml.YAMLToJSON([]byte(input))
	if err != nil {
		msg := err.Error()
		v.Error = &msg
	} else {
		text := string(j)
		v.JSON = &text
	}
	if err := out.Encode(v); err != nil {
		panic(err)
	}
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

func random(r *rand.Rand) string {
	var b strings.Builder
	n := 2 + r.IntN(12)
	for i := 0; i < n; i++ {
		b.WriteString(fragments[r.IntN(len(fragments))])
	}
	return b.String()
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: goyaml CASES [RANDOM_COUNT]")
		os.Exit(2)
	}
	file, err := os.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	defer file.Close()
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
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
		record(out, input)
	}
	if err := lines.Err(); err != nil {
		panic(err)
	}
	if len(os.Args) > 2 {
		count, err := strconv.Atoi(os.Args[2])
		if err != nil {
			panic(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for i := 0; i < count; i++ {
			record(out, random(r))
		}
	}
}
