// Prints COUNT generated floats as their IEEE bits in hex and Go's
// strconv.FormatFloat(x, 'g', -1, 64), for src/gofmt.rs's tests:
//
//	go run . 3000 > ../../tests/compat/floats.txt
//
// A third are random bit patterns, a third integers over powers of two
// (where two shortest candidates are often equally close), a third
// fractions across forty decades. The seed is fixed.
//
//	go run . serve
//
// answers the fuzz targets one request at a time (serve.go): {"bits": HEX}
// in, {"g": TEXT} out, TEXT being FormatFloat's 'g' of that float64.
package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
)

// A request of serve and its answer.
type float struct {
	Bits string `json:"bits"`
	G    string `json:"g"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		serve(func(f float) any {
			bits, err := strconv.ParseUint(f.Bits, 16, 64)
			if err != nil {
				panic(err)
			}
			return float{Bits: f.Bits, G: strconv.FormatFloat(math.Float64frombits(bits), 'g', -1, 64)}
		})
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gofloat COUNT | gofloat serve")
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
