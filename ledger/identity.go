package ledger

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
	"golang.org/x/text/unicode/norm"
)

// MaxRecordIDLength is the longest provider record id the ledger stores, in
// bytes: far above every provider's ids (Stripe's and Twilio's are 30–40
// characters, an RFC 5322 Message-ID rarely passes 200) and far below
// PostgreSQL's btree row limit (about 2,700 bytes), so that an id that
// proves an operation can always be written and indexed.
const MaxRecordIDLength = 512

// ErrBadRecordID: a provider record id is not in the one canonical form the
// ledger stores (see [CheckRecordID]).
var ErrBadRecordID = errors.New("malformed provider record id")

// CheckRecordID reports whether id is a provider record id as the ledger
// stores it: 1 to [MaxRecordIDLength] bytes of UTF-8 in Unicode NFC, with
// no control character and no surrounding white space. Ids are compared as
// exact bytes everywhere (the sweep, the re-lookup, resolutions, the unique
// index), so "rec-1", "rec-1 " and a decomposed "café" would be three ids
// for what may be one record; rather than guess which, an id outside this
// form is refused — from a provider it is a malformed answer, from a person
// a clear error. Nothing is trimmed or normalized on the way in.
//
// The error matches [ErrBadRecordID] and says what is wrong without
// quoting the id (it may be long, or hostile).
func CheckRecordID(id string) error {
	problem := ""
	switch {
	case id == "":
		problem = "empty"
	case len(id) > MaxRecordIDLength:
		problem = fmt.Sprintf("%d bytes, more than %d", len(id), MaxRecordIDLength)
	case !utf8.ValidString(id):
		problem = "not valid UTF-8"
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		problem = "holds a control character"
	case strings.TrimSpace(id) != id:
		problem = "has white space around it"
	case !norm.NFC.IsNormalString(id):
		problem = "not in Unicode NFC form"
	}
	if problem != "" {
		return fmt.Errorf("%w: %s", ErrBadRecordID, problem)
	}
	return nil
}

// MaxPayloadHashLength is the length of a payload hash: SHA-256 as 64
// lowercase hex characters.
const MaxPayloadHashLength = 64

// CheckPayloadHash reports whether h is a payload hash as the ledger
// stores it: 64 lowercase hex characters. A record carrying anything else
// cannot be compared, and is a malformed answer rather than a mismatch.
func CheckPayloadHash(h string) error {
	if !isHexSHA256(h) {
		return errors.New("payload hash is not 64 lowercase hex characters")
	}
	return nil
}

// NormalizeRecipient is the one normalization applied to recipients before
// they are compared: surrounding white space removed and ASCII letters
// lowercased. It is deliberately conservative — no Unicode case folding,
// which would take the KELVIN SIGN for "k" and LONG S for "s", and so
// different mailboxes for one — and a workflow should store recipients in
// this form (docs/ledger.md, "The ledger contract").
func NormalizeRecipient(s string) string {
	s = strings.TrimSpace(s)
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// SameRecipient reports whether two recipients are the same after
// [NormalizeRecipient].
func SameRecipient(a, b string) bool { return NormalizeRecipient(a) == NormalizeRecipient(b) }

// NormalizePhone returns the E.164 form of a phone number written with a
// leading + and its country code ("+1 (555) 010-0002" → "+15550100002"),
// or an error saying why it cannot: numbers without a country code are
// refused rather than guessed at. The error does not quote the number.
func NormalizePhone(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "+") {
		return "", errors.New("phone number is not in international form (a leading + and the country code)")
	}
	// Digits and the usual separators only: the parser would read letters
	// as a keypad ("CALL" → 2255), which is a guess, not a number.
	if strings.IndexFunc(s[1:], func(r rune) bool { return !strings.ContainsRune("0123456789 ()-./", r) }) >= 0 {
		return "", errors.New("phone number holds characters other than digits and separators")
	}
	num, err := phonenumbers.Parse(s, "")
	if err != nil {
		return "", errors.New("phone number does not parse as an international number")
	}
	if !phonenumbers.IsPossibleNumber(num) {
		return "", errors.New("phone number has the wrong length for its country")
	}
	return phonenumbers.Format(num, phonenumbers.E164), nil
}
