package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseJSON must accept and read exactly what encoding/json does (on UTF-8 input).
func TestParseJSONAgreesWithEncodingJSON(t *testing.T) {
	texts := []string{
		`{}`, `[]`, `""`, `0`, `-0`, `1.5e3`, `-12.25E-2`, `1E+2`, `true`, `false`, `null`, " \t\n\r{} ",
		`{"a":1,"b":[1,2,{"c":null}],"d":"x","a":2}`, `[[[[[]]]]]`, `{"":""}`,
		`"\"\\\/\b\f\n\r\t"`, `"\u0041\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\uDBFF\uDFFF"`, `"\ud800"`,
		`"\ud800x"`, `"\ud800\u0041"`, `"\udc00\ud800"`, `"\ud800\ud800\udc00"`, `"héllo €"`, "\"\x7f\"",
		// invalid
		``, ` `, `{`, `[`, `"`, `"abc`, `{"a"}`, `{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{a:1}`,
		`01`, `1.`, `.5`, `-`, `1e`, `1e+`, `+1`, `0x10`, `tru`, `nul`, `True`, `{} {}`, `"a" x`,
		"\"\x01\"", "\"a\nb\"", `"\x"`, `"\u12"`, `"\u12g4"`, `"\u+123"`, `"\`, `'a'`, `NaN`,
	}
	for _, text := range texts {
		agreesWithEncodingJSON(t, []byte(text))
	}
	for _, levels := range []int{10000, 10001} { // encoding/json's limit
		agreesWithEncodingJSON(t, []byte(strings.Repeat("[", levels)+strings.Repeat("]", levels)))
	}
}

// go test -fuzz FuzzParseJSON looks further.
func FuzzParseJSON(f *testing.F) {
	f.Add([]byte(`{"a":[1,-2.5e3,"\ud83d\ude00",true,null]}`))
	f.Fuzz(func(t *testing.T, text []byte) {
		if utf8.Valid(text) { // encoding/json replaces what is not UTF-8; parseJSON keeps it
			agreesWithEncodingJSON(t, text)
		}
	})
}

func agreesWithEncodingJSON(t *testing.T, text []byte) {
	var want any
	wantErr := json.Unmarshal(text, &want)
	if _, outOfRange := wantErr.(*json.UnmarshalTypeError); outOfRange {
		return // 1e999: no error for parseJSON, which is only asked whether stdin is JSON
	}
	got, err := parseJSON(text)
	if (err == nil) != (wantErr == nil) {
		t.Errorf("%q: error %v, encoding/json says %v", text, err, wantErr)
	} else if err == nil && !reflect.DeepEqual(got, want) {
		t.Errorf("%q: read %#v, encoding/json %#v", text, got, want)
	}
}

func TestQuote(t *testing.T) {
	for _, s := range []string{"", "plain", `a"b\c`, "tab\there\nnl\x00\x1f\x7f", "é€😀", "</script>"} {
		var back string
		if err := json.Unmarshal(quote(nil, s), &back); err != nil || back != s {
			t.Errorf("%q: quoted as %s, read back %q (%v)", s, quote(nil, s), back, err)
		}
	}
}
