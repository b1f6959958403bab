// Records what go.starlark.net (the reference's interpreter) gives for
// generated expressions, for the Rust tests that replay them:
//
//	go run . json 3000 > ../../tests/compat/json.txt
//	go run . text 3000 > ../../tests/compat/text.txt
//	go run . cases ../../tests/compat/conversions.in > ../../tests/compat/conversions.txt
//
// json: calls of the json module (go.starlark.net/lib/json) on values and
// texts glued together from pieces that stress it (src/builtins/json.rs).
// text: str, repr and % formatting of generated values, and arithmetic
// whose result text depends on Go's number formatting (src/builtins/text.rs).
// cases: the expressions of a file, one per line (src/builtins/numbers.rs).
//
// Each line is EXPRESSION<TAB>RESULT, where RESULT is go.starlark.net's
// repr of the value or "ERR: " and the error message; calls whose error
// message spans lines are left out. Seeds are fixed.
package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"go.starlark.net/lib/json"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

func main() {
	if len(os.Args) != 3 {
		usage()
	}
	var expressions func(int) (string, bool)
	switch os.Args[1] {
	case "json", "text":
		count, err := strconv.Atoi(os.Args[2])
		if err != nil {
			usage()
		}
		generate, r := jsonCall, rand.New(rand.NewPCG(7, 8))
		if os.Args[1] == "text" {
			generate, r = textCall, rand.New(rand.NewPCG(11, 12))
		}
		expressions = func(i int) (string, bool) { return generate(r), i < count }
	case "cases":
		data, err := os.ReadFile(os.Args[2])
		if err != nil {
			panic(err)
		}
		var lines []string
		for _, line := range strings.Split(string(data), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		expressions = func(i int) (string, bool) {
			if i < len(lines) {
				return lines[i], true
			}
			return "", false
		}
	default:
		usage()
	}
	predeclared := starlark.StringDict{
		"json":   json.Module,
		"struct": starlark.NewBuiltin("struct", starlarkstruct.Make),
	}
	for i := 0; ; i++ {
		expr, ok := expressions(i)
		if !ok {
			break
		}
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
			continue // A vector is one line.
		}
		fmt.Printf("%s\t%s\n", expr, result)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gostarlark json|text COUNT | gostarlark cases FILE")
	os.Exit(2)
}
