// Prints the go.starlark.net step count of each workload given as a file argument.
package main

import (
	"fmt"
	"os"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

func main() {
	opts := &syntax.FileOptions{TopLevelControl: true, Set: true, While: true}
	for _, path := range os.Args[1:] {
		src, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		thread := &starlark.Thread{Name: path}
		thread.SetMaxExecutionSteps(1_000_000_000)
		_, err = starlark.ExecFileOptions(opts, thread, path, src, starlark.StringDict{})
		fmt.Printf("%s\t%d\t%v\n", path, thread.ExecutionSteps(), err)
	}
}
