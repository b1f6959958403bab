// Records what Go's regexp (the reference's regex namespace) gives for
// generated patterns, texts and replacement templates, for
// src/builtins/regex.rs's tests:
//
//	go run . 3000 > ../../tests/compat/regex.jsonl
//	go run . serve
//
// Each line holds the pattern, text and template and either the error the
// pattern gives or the result of every member of the namespace, computed
// as the reference's documentation describes them. The seed is fixed.
// serve answers the fuzz targets one request at a time (serve.go): a
// pattern, text and template in, their vector out.
package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"strconv"
	"strings"
)

type vector struct {
	Pattern     string    `json:"pattern"`
	S           string    `json:"s"`
	Replacement string    `json:"replacement"`
	Error       *string   `json:"error,omitempty"`
	Match       *bool     `json:"match"`
	Find        *string   `json:"find"`
	FindAll     []string  `json:"find_all"`
	FindGroups  *[]string `json:"find_groups"`
	Replace     string    `json:"replace"`
	ReplaceAll  string    `json:"replace_all"`
	Split       []string  `json:"split"`
}

var patternPieces = []string{
	"a", "b", "c", "ab", "é", ".", "*", "+", "?", "{2}", "{1,3}", "{2,}", "{1001}", "{,2}", "|", "(", ")", "(?:",
	"(?P<n>", "(?<m>", "(?P<n", "[", "]", "[a-c]", "[^a]", "[é-ü]", "\\d", "\\w", "\\s", "\\D", "\\W", "\\S",
	"\\b", "\\B", "^", "$", "\\A", "\\z", "(?i)", "(?s)", "(?m)", "(?U)", "(?i:", "\\pL", "\\p{Greek}", "\\PN",
	"\\p{Foo}", "[[:alpha:]]", "[[:^digit:]]", "[[:word:]]", "[[:foo:]]", "\\Q.*\\E", "\\Qa", "\\x41", "\\x{263a}",
	"\\n", "\\.", "\\\\", "\\1", "(?=", "\\Z", "*?", "+?", "??", "**", "\\C", "\\8", "\\e", "\\a", "\\f", "\\t",
	"[\\d]", "[\\b]", "[a-]", "[z-a]", "x*", "(a*)", "(a|b)", "()", "(?P<n>a)", "(?i)é", "\\S+", " ",
}

var texts = []string{
	"", "a", "aab", "baaab", "abcabc", "a1 b2", "é", "É", "éa", "\n", "a\nb", "ab\ncd", "ÉCOLE école", "α β γ",
	"x.y*z", "aaa", "A-B_c", "tab\there", "123", "a$b", "€100", "a\u2028b", "  ", "k=v; k2=v2",
}

var templates = []string{"", "-", "$1", "${1}x", "$1x", "$$", "$n", "${m}", "$", "$0", "<$0>", "${n}", "$2", "$1$1", "x$"}

func pick(r *rand.Rand, from []string) string { return from[r.IntN(len(from))] }

func main() {
	if len(os.Args) == 2 && os.Args[1] == "serve" {
		serve(func(v vector) any { return record(v.Pattern, v.S, v.Replacement) })
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: goregex COUNT | goregex serve")
		os.Exit(2)
	}
	count, err := strconv.Atoi(os.Args[1])
	if err != nil {
		panic(err)
	}
	r := rand.New(rand.NewPCG(9, 10))
	out := json.NewEncoder(os.Stdout)
	out.SetEscapeHTML(false)
	for i := 0; i < count; i++ {
		var p strings.Builder
		for j, n := 0, 1+r.IntN(5); j < n; j++ {
			p.WriteString(pick(r, patternPieces))
		}
		v := record(p.String(), pick(r, texts)+pick(r, texts), pick(r, templates))
		if err := out.Encode(v); err != nil {
			panic(err)
		}
	}
}

func record(pattern, s, replacement string) vector {
	v := vector{Pattern: pattern, S: s, Replacement: replacement}
	re, err := regexp.Compile(pattern)
	if err != nil {
		msg := err.Error()
		v.Error = &msg
		return v
	}
	match := re.MatchString(s)
	v.Match = &match
	if loc := re.FindStringIndex(s); loc != nil {
		found := s[loc[0]:loc[1]]
		v.Find = &found
	}
	v.FindAll = re.FindAllString(s, -1)
	if v.FindAll == nil {
		v.FindAll = []string{}
	}
	if groups := re.FindStringSubmatch(s); groups != nil {
		rest := groups[1:]
		v.FindGroups = &rest
	}
	v.Replace = s
	if loc := re.FindStringSubmatchIndex(s); loc != nil {
		expanded := re.ExpandString(nil, replacement, s, loc)
		v.Replace = s[:loc[0]] + string(expanded) + s[loc[1]:]
	}
	v.ReplaceAll = re.ReplaceAllString(s, replacement)
	v.Split = re.Split(s, -1)
	return v
}
