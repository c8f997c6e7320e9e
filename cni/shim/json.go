package main

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON reader and string quoter in place of encoding/json: the shim only needs to know
// that stdin is JSON, read a few fields and write small objects, and encoding/json's reflection
// (field caches built anew by every run, deep stacks) cost a tenth of a call's CPU.

// parseJSON reads one JSON text (RFC 8259, as strict as encoding/json) into map[string]any,
// []any, string, float64, bool or nil. Bytes that are not UTF-8 are kept as they are.
func parseJSON(text []byte) (any, error) {
	p := &parser{text: text}
	v, err := p.value(0)
	if err == nil && p.space() < len(text) {
		err = p.unexpected("after top-level value")
	}
	return v, err
}

type parser struct {
	text []byte
	i    int
}

var errEnd = errors.New("unexpected end of JSON input")

// space skips white space and says where the next token starts.
func (p *parser) space() int {
	for p.i < len(p.text) && bytes.IndexByte([]byte(" \t\n\r"), p.text[p.i]) >= 0 {
		p.i++
	}
	return p.i
}

// skip consumes c if it comes next, white space aside.
func (p *parser) skip(c byte) bool {
	if p.space() < len(p.text) && p.text[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) unexpected(where string) error {
	if p.i >= len(p.text) {
		return errEnd
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", p.text[p.i], where, p.i)
}

func (p *parser) value(depth int) (any, error) {
	if depth >= 10000 { // as encoding/json
		return nil, errors.New("JSON nested too deeply")
	}
	if p.space() >= len(p.text) {
		return nil, errEnd
	}
	switch c := p.text[p.i]; {
	case c == '{':
		p.i++
		object := map[string]any{}
		if p.skip('}') {
			return object, nil
		}
		for {
			if p.space() >= len(p.text) || p.text[p.i] != '"' {
				return nil, p.unexpected("looking for beginning of object key string")
			}
			key, err := p.str()
			if err != nil {
				return nil, err
			}
			if !p.skip(':') {
				return nil, p.unexpected("after object key")
			}
			if object[key], err = p.value(depth + 1); err != nil {
				return nil, err
			}
			if p.skip('}') {
				return object, nil
			}
			if !p.skip(',') {
				return nil, p.unexpected("after object key:value pair")
			}
		}
	case c == '[':
		p.i++
		array := []any{}
		if p.skip(']') {
			return array, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			array = append(array, v)
			if p.skip(']') {
				return array, nil
			}
			if !p.skip(',') {
				return nil, p.unexpected("after array element")
			}
		}
	case c == '"':
		return p.str()
	case c == '-' || '0' <= c && c <= '9':
		return p.number()
	case bytes.HasPrefix(p.text[p.i:], []byte("true")):
		p.i += 4
		return true, nil
	case bytes.HasPrefix(p.text[p.i:], []byte("false")):
		p.i += 5
		return false, nil
	case bytes.HasPrefix(p.text[p.i:], []byte("null")):
		p.i += 4
		return nil, nil
	}
	return nil, p.unexpected("looking for beginning of value")
}

// number follows the grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() (any, error) {
	start := p.i
	next := func(set string) bool {
		if p.i < len(p.text) && bytes.IndexByte([]byte(set), p.text[p.i]) >= 0 {
			p.i++
			return true
		}
		return false
	}
	digits := func() bool {
		from := p.i
		for next("0123456789") {
		}
		return p.i > from
	}
	next("-")
	if !next("0") && !digits() {
		return nil, p.unexpected("in numeric literal")
	}
	if next(".") && !digits() {
		return nil, p.unexpected("after decimal point in numeric literal")
	}
	if next("eE") {
		next("+-")
		if !digits() {
			return nil, p.unexpected("in exponent of numeric literal")
		}
	}
	f, _ := strconv.ParseFloat(string(p.text[start:p.i]), 64) // out of range: ±Inf, no error
	return f, nil
}

// str reads a string from its opening quote, decoding escapes.
func (p *parser) str() (string, error) {
	p.i++
	start := p.i
	var out []byte // nil while there is no escape to decode
	for p.i < len(p.text) {
		c := p.text[p.i]
		switch {
		case c == '"':
			p.i++
			if out == nil {
				return string(p.text[start : p.i-1]), nil
			}
			return string(out), nil
		case c < 0x20:
			return "", p.unexpected("in string literal")
		case c != '\\':
			if out != nil {
				out = append(out, c)
			}
			p.i++
			continue
		}
		if out == nil {
			out = append([]byte{}, p.text[start:p.i]...)
		}
		if p.i++; p.i >= len(p.text) {
			break
		}
		if k := bytes.IndexByte([]byte(`"\/bfnrt`), p.text[p.i]); k >= 0 {
			out = append(out, "\"\\/\b\f\n\r\t"[k])
			p.i++
			continue
		}
		r, ok := p.hex4(p.i)
		if !ok {
			return "", p.unexpected("in string escape code")
		}
		p.i += 5
		if utf16.IsSurrogate(r) {
			// A pair of escapes makes one character; a lone half is U+FFFD (as encoding/json).
			low, ok := p.hex4(p.i + 1)
			if pair := utf16.DecodeRune(r, low); ok && p.text[p.i] == '\\' && pair != utf8.RuneError {
				r, p.i = pair, p.i+6
			} else {
				r = utf8.RuneError
			}
		}
		out = utf8.AppendRune(out, r)
	}
	return "", errEnd
}

// hex4 reads the uXXXX of a \uXXXX escape at text[at:].
func (p *parser) hex4(at int) (rune, bool) {
	if at+5 > len(p.text) || p.text[at] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range p.text[at+1 : at+5] {
		d := bytes.IndexByte([]byte("0123456789abcdef"), c|0x20) // c|0x20: lower case
		if d < 0 || c < '0' {
			return 0, false
		}
		r = r<<4 | rune(d)
	}
	return r, true
}

// quote appends s as a JSON string. Only '"', '\' and control characters need escaping; bytes
// that are not UTF-8 are passed on as they are, as the agent's and the runtime's decoders
// accept them.
func quote(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
