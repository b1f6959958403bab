package main

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

var verbs = []string{"%s", "%r", "%d", "%i", "%x", "%X", "%o", "%e", "%E", "%f", "%F", "%g", "%G", "%c", "%%", "%5d", "%-3s", "%.2f", "%(a)s", "%", "%z"}

// textCall writes an expression whose value is text the interpreter wrote.
func textCall(r *rand.Rand) string {
	switch r.IntN(9) {
	case 0:
		return "str(" + value(r, 0) + ")"
	case 1:
		return "repr(" + value(r, 0) + ")"
	case 2, 3:
		n := 1 + r.IntN(3)
		format := make([]string, n)
		args := make([]string, n)
		for i := range format {
			format[i] = pick(r, verbs)
			args[i] = scalar(r)
		}
		return quote(strings.Join(format, pick(r, []string{" ", "|", ""}))) + " % (" + strings.Join(args, ", ") + ",)"
	case 4:
		return quote(pick(r, verbs)) + " % " + scalar(r)
	case 5:
		return "str(struct(a = " + value(r, 1) + ", b = " + value(r, 1) + "))"
	case 6:
		return "str(" + float(r) + " " + pick(r, []string{"+", "-", "*", "/", "//", "%"}) + " " + pick(r, []string{float(r), strconv.Itoa(r.IntN(20) - 10)}) + ")"
	case 7:
		return "str(" + strconv.Itoa(r.IntN(2001)-1000) + " " + pick(r, []string{"<<", ">>", "//", "%", "*", "/"}) + " " + strconv.Itoa(r.IntN(70)-5) + ")"
	default:
		return pick(r, []string{"int", "float", "str", "repr", "bool"}) + "(" + scalar(r) + ")"
	}
}

// scalar writes a value % and the conversions mostly take.
func scalar(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return strconv.Itoa(r.IntN(200000) - 100000)
	case 1:
		return strconv.Itoa(r.IntN(0x11000))
	case 2, 3:
		return float(r)
	case 4:
		return quote(randomString(r))
	default:
		return value(r, 2)
	}
}
