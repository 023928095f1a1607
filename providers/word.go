package providers

import "strings"

// Word is s when it is shaped like an identifier — from 1 to max bytes of
// ASCII letters, digits, '-', '_' and '#' (a kind such as
// "calendar#event") — and "-" otherwise. It is what an adapter quotes
// from a provider's answer in an error, an excerpt or a log line (an id,
// a status, an error code): nothing that could hold an address, a phone
// number or free text gets through.
func Word(s string, max int) string {
	if s == "" || len(s) > max || strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '#')
	}) {
		return "-"
	}
	return s
}
