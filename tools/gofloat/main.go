// Prints COUNT generated floats as their IEEE bits in hex and Go's
// strconv.FormatFloat(x, 'g', -1, 64), for src/gofmt.rs's tests:
//
//	go run . 3000 > ../../tests/compat/floats.txt
//
// A third are random bit patterns, a third integers over powers of two
// (where two shortest candidates are often equally close), a third
// fractions across forty decades. The seed is fixed.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gofloat COUNT")
		os.Exit(2)
	}
	count, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < count; i++ {
		var x float64
		switch i % 3 {
		case 0:
			x = math.Float64frombits(r.Uint64())
		case 1:
			x = float64(r.Int64N(1<<62)) / float64(int64(1)<<r.IntN(12))
		default:
			x = (r.Float64() - 0.5) * math.Pow(10, float64(r.IntN(40)-20))
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		fmt.Printf("%016x %s\n", math.Float64bits(x), strconv.FormatFloat(x, 'g', -1, 64))
	}
}
