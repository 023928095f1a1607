package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The payload hash lets a workflow and a provider adapter agree, without
// sharing code, that a provider's record carries the payload the workflow
// meant to send. It is specified exactly so that any language computes the
// same value:
//
//  1. Take the normalized fields as a JSON value (usually an object such as
//     {"amount":1299,"currency":"usd","to":"+15550100"}).
//  2. Canonicalize it, RFC 8785 (JCS) style:
//     - object members sorted by key, comparing keys as UTF-16 code units;
//     - no whitespace between tokens;
//     - numbers as IEEE-754 doubles written the way ECMAScript's
//     Number.prototype.toString writes them (1.0 → 1, 1e21 → 1e+21, -0 → 0);
//     - strings, keys included, in Unicode Normalization Form C and escaped
//     as JSON.stringify does: \" \\ \b \f \n \r \t, other control characters
//     as \u00xx, everything else as literal UTF-8;
//     - duplicate keys (after normalization), NaN, infinities and invalid
//     UTF-8 are errors.
//  3. SHA-256 of the canonical bytes, lowercase hex.
//
// Deviation from RFC 8785: strings are NFC-normalized, so that "é" typed as
// one code point and as e + combining accent hash alike.
//
// payloadhash.js beside this file is the same algorithm for an n8n Code
// node; testdata/payload-hash-vectors.json is checked against both.

// maxCanonicalDepth bounds nesting, so hostile input cannot exhaust the stack.
const maxCanonicalDepth = 64

// ErrInvalidPayload is wrapped by every canonicalization error.
var ErrInvalidPayload = errors.New("invalid payload")

// PayloadHash returns the lowercase hex SHA-256 of the canonical JSON of
// payload, a JSON document. Errors wrap [ErrInvalidPayload].
func PayloadHash(payload []byte) (string, error) {
	canonical, err := Canonicalize(payload)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), nil
}

// PayloadHashOf marshals v with encoding/json and returns its payload hash.
func PayloadHashOf(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	return PayloadHash(b)
}

// Canonicalize returns the canonical form of the JSON document doc, as
// described above. Errors wrap [ErrInvalidPayload].
func Canonicalize(doc []byte) ([]byte, error) {
	if !utf8.Valid(doc) {
		return nil, fmt.Errorf("%w: not valid UTF-8", ErrInvalidPayload)
	}
	if err := checkSurrogateEscapes(doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var buf bytes.Buffer
	if err := canonicalValue(dec, &buf, 0); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// The decoder's bare EOF names no problem.
			err = errors.New("the JSON ends before its value does")
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalidPayload, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON value", ErrInvalidPayload)
	}
	return buf.Bytes(), nil
}

func canonicalValue(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	if depth > maxCanonicalDepth {
		return fmt.Errorf("nested deeper than %d levels", maxCanonicalDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF && depth == 0 {
			return errors.New("empty document")
		}
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return canonicalObject(dec, buf, depth)
		case '[':
			return canonicalArray(dec, buf, depth)
		}
		return fmt.Errorf("unexpected %q", t)
	case string:
		writeCanonicalString(buf, norm.NFC.String(t))
	case json.Number:
		s, err := canonicalNumber(string(t))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case nil:
		buf.WriteString("null")
	}
	return nil
}

func canonicalObject(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	type member struct {
		key   string
		value []byte
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := norm.NFC.String(tok.(string))
		if seen[key] {
			return fmt.Errorf("duplicate key %q", key)
		}
		seen[key] = true
		var value bytes.Buffer
		if err := canonicalValue(dec, &value, depth+1); err != nil {
			return err
		}
		members = append(members, member{key, value.Bytes()})
	}
	if _, err := dec.Token(); err != nil { // '}'
		return err
	}
	slices.SortFunc(members, func(a, b member) int { return compareUTF16(a.key, b.key) })
	buf.WriteByte('{')
	for i, m := range members {
		if i > 0 {
			buf.WriteByte(',')
		}
		writeCanonicalString(buf, m.key)
		buf.WriteByte(':')
		buf.Write(m.value)
	}
	buf.WriteByte('}')
	return nil
}

func canonicalArray(dec *json.Decoder, buf *bytes.Buffer, depth int) error {
	buf.WriteByte('[')
	for i := 0; dec.More(); i++ {
		if i > 0 {
			buf.WriteByte(',')
		}
		if err := canonicalValue(dec, buf, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	buf.WriteByte(']')
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as JavaScript's
// default sort and RFC 8785 do (it differs from byte order above U+FFFF).
func compareUTF16(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// writeCanonicalString writes s as JSON.stringify would.
func writeCanonicalString(buf *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte(hexDigits[r>>4])
				buf.WriteByte(hexDigits[r&0xf])
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// canonicalNumber writes the JSON number text as ECMAScript's
// Number.prototype.toString writes the double nearest to it.
func canonicalNumber(text string) (string, error) {
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", fmt.Errorf("number %s is out of the range of a double", text)
	}
	if f == 0 {
		return "0", nil // -0 too
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest round-trip digits d1…dk and exponent e: f = d1.d2…dk × 10^e.
	sci := strconv.FormatFloat(f, 'e', -1, 64)
	mantissa, expText, _ := strings.Cut(sci, "e")
	digits := strings.Replace(mantissa, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	k, n := len(digits), exp+1 // ECMAScript's k and n: f = 0.d1…dk × 10^n
	var s string
	switch {
	case k <= n && n <= 21:
		s = digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		s = digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		s = "0." + strings.Repeat("0", -n) + digits
	default:
		s = digits[:1]
		if k > 1 {
			s += "." + digits[1:]
		}
		e := n - 1
		if e >= 0 {
			s += "e+" + strconv.Itoa(e)
		} else {
			s += "e-" + strconv.Itoa(-e)
		}
	}
	return sign + s, nil
}

// checkSurrogateEscapes rejects a \uXXXX escape of a UTF-16 surrogate that is
// not part of a high-low pair. encoding/json would silently turn it into
// U+FFFD, while JavaScript keeps it; neither is a string RFC 8785 allows.
func checkSurrogateEscapes(doc []byte) error {
	inString, pendingHigh := false, false
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		if !inString {
			inString = c == '"'
			continue
		}
		if c != '\\' {
			if pendingHigh {
				return errors.New("unpaired UTF-16 surrogate escape")
			}
			inString = c != '"'
			continue
		}
		if i+1 < len(doc) && doc[i+1] != 'u' {
			if pendingHigh {
				return errors.New("unpaired UTF-16 surrogate escape")
			}
			i++ // skip the escaped character
			continue
		}
		if i+5 >= len(doc) {
			return nil // truncated; the decoder reports it
		}
		v, err := strconv.ParseUint(string(doc[i+2:i+6]), 16, 16)
		if err != nil {
			return nil // malformed; the decoder reports it
		}
		i += 5
		switch {
		case v >= 0xd800 && v < 0xdc00:
			if pendingHigh {
				return errors.New("unpaired UTF-16 surrogate escape")
			}
			pendingHigh = true
		case v >= 0xdc00 && v < 0xe000:
			if !pendingHigh {
				return errors.New("unpaired UTF-16 surrogate escape")
			}
			pendingHigh = false
		default:
			if pendingHigh {
				return errors.New("unpaired UTF-16 surrogate escape")
			}
		}
	}
	return nil
}
