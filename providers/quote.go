package providers

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"unicode/utf8"
)

// ProviderText is text a provider wrote — the message of an error it
// answered with, the error it gave for one operation of a batch — carried
// in an adapter's error apart from the adapter's own words. Free text
// from a provider can hold what is the customer's (a one-time code, a
// login link, a line of the message) and errors end up in evidence,
// which is never deleted, and in the provider's health: so its Error is
// never the text, only its length and a digest, and an error that wraps
// it (fmt.Errorf's %w) reads "…: HTTP 400 invalid_request_error: [provider
// text: 57 characters, digest 3f2a9c01b7de]" — the adapter's words, the
// status and the provider's codes readable, the provider's text not.
//
// The digest is the first 12 hex digits of the HMAC-SHA-256 of the text
// under a key drawn for the process and never kept, as evidence digests
// a record's texts ([NewDigest]): two errors of one process holding the
// same text show the same digest, and a short code cannot be recovered by
// hashing every candidate.
type ProviderText struct {
	text string
}

// Quote returns text, which a provider wrote, as a [ProviderText] for an
// adapter's error to wrap.
func Quote(text string) *ProviderText { return &ProviderText{text: text} }

// Error is the text's length in characters and its digest, never the
// text.
func (p *ProviderText) Error() string {
	return fmt.Sprintf("[provider text: %d characters, digest %s]", utf8.RuneCountInString(p.text), processDigest()(p.text))
}

// Text is the text itself, for a person at a terminal who must read what
// the provider said. Never store or log it: that is what Error is for.
func (p *ProviderText) Text() string { return p.text }

// processDigest is the digest of [ProviderText]s: one key per process.
var processDigest = sync.OnceValue(NewDigest)

// NewDigest returns a digest of texts under a key of its own, drawn at
// random and never kept: the first 12 hex digits of the HMAC-SHA-256 of a
// text's UTF-8 bytes. Texts digested by one digest compare; a text cannot
// be recovered from its digest by hashing every candidate, as it could
// from a plain hash.
func NewDigest() func(string) string {
	key := make([]byte, 32)
	rand.Read(key) //nolint:errcheck // crypto/rand.Read never fails (Go 1.24+)
	return func(s string) string {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return hex.EncodeToString(m.Sum(nil)[:6])
	}
}
