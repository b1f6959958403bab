// Records what Go's encoding packages (which the reference's encoding
// namespace wraps) make of generated inputs to its four decoders, for
// src/builtins/encoding.rs's tests:
//
//	go run . 3000 > ../../tests/compat/encoding.jsonl
//
// Each line holds the member, its input and either the decoded bytes in hex
// or the error the member reports. The seed is fixed.
//
//	go run . serve
//
// answers the fuzz targets one request at a time (serve.go): a member and
// its input in, the vector out (an unknown member is an error).
//
// Go's unpadded base32 decoder drops a final group of 1, 3 or 6 characters
// without an error; the reference's b32dec rejects such lengths (builtins.md
// 5.3), so those inputs are left out here and tested in encoding.rs.
package main

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

type vector struct {
	Member string  `json:"member"`
	Data   string  `json:"data"`
	Hex    *string `json:"hex,omitempty"`
	Error  *string `json:"error,omitempty"`
}

var decoders = []struct {
	name   string
	decode func(string) ([]byte, error)
	pieces []string
}{
	{"b64dec", base64.StdEncoding.DecodeString, []string{"aGVs", "bG8=", "QQ==", "QUI=", "AAAA", "/+/+", "-_", "=", "\r", "\n", "a", "Zm9v", " ", "é", "YQ", "YW"}},
	{"b64url_dec", base64.RawURLEncoding.DecodeString, []string{"aGVs", "bG8", "QQ", "QUI", "AAAA", "-_-_", "+/", "=", "\r", "\n", "a", "Zm9v", " ", "é"}},
	{"b32dec", base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString, []string{"NBSWY3DP", "ME", "MFRA", "MFRGG", "MFRGGZA", "AAAAAAAA", "77", "=", "\r", "\n", "a", "1", "8", " ", "é", "Z"}},
	{"hex_dec", hex.DecodeString, []string{"68", "65", "6C", "6c", "ff", "00", "0", "x", "g", " ", "é", "AB", "\n"}},
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		serve(func(v vector) any { return decodeVector(v.Member, v.Data) })
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goencoding COUNT | goencoding serve")
		os.Exit(2)
	}
	count, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(13, 14))
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for i := 0; i < count; i++ {
		d := decoders[r.IntN(len(decoders))]
		var b strings.Builder
		for j, n := 0, r.IntN(6); j < n; j++ {
			b.WriteString(d.pieces[r.IntN(len(d.pieces))])
		}
		if d.name == "b32dec" && impossibleBase32Length(b.String()) {
			continue
		}
		if err := out.Encode(decodeVector(d.name, b.String())); err != nil {
			panic(err)
		}
	}
}

// impossibleBase32Length reports whether s, line breaks aside, ends in a
// group of characters that no unpadded base32 encoding produces.
// The vector of the member named `member` for `data`.
func decodeVector(member, data string) vector {
	v := vector{Member: member, Data: data}
	for _, d := range decoders {
		if d.name != member {
			continue
		}
		decoded, err := d.decode(data)
		if err != nil {
			msg := "encoding." + d.name + ": " + err.Error()
			v.Error = &msg
		} else {
			text := hex.EncodeToString(decoded)
			v.Hex = &text
		}
		return v
	}
	msg := "no member " + member
	v.Error = &msg
	return v
}

func impossibleBase32Length(s string) bool {
	n := len(strings.NewReplacer("\r", "", "\n", "").Replace(s))
	switch n % 8 {
	case 1, 3, 6:
		return true
	}
	return false
}
