package httplookup

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/providers"
)

// pageKeys are the keys paged APIs use to say an answer goes on: the
// protocol has none, and an endpoint that relays such an answer has
// returned one page of several.
var pageKeys = []string{"has_more", "next", "next_cursor", "cursor", "next_page", "next_page_token", "total", "count"}

// checkKeys returns an error when the JSON object body (already checked
// strictly) holds a key other than those the protocol names for it. A key
// sweeper does not know is refused rather than ignored: it could be some
// paging scheme's (a page's "links", a "meta" with a total), and reading
// past it would read half an answer as the whole. Unknown keys inside a
// record are still ignored: a record cannot say that the answer goes on.
func checkKeys(body []byte, allowed ...string) error {
	var top map[string]json.RawMessage
	if err := providers.DecodeJSON(body, &top); err != nil {
		return err
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	slices.Sort(keys) // one error whatever the order of the keys
	for _, k := range keys {
		switch {
		case slices.Contains(allowed, k):
		case slices.Contains(pageKeys, k):
			return fmt.Errorf("the answer is paged (key %q): the protocol has no pages; answer every record at once", k)
		case providers.PlainKey(k):
			return fmt.Errorf("unknown key %q: the answer holds only %s", k, strings.Join(allowed, " and "))
		default:
			return fmt.Errorf("an unknown key: the answer holds only %s", strings.Join(allowed, " and "))
		}
	}
	return nil
}

// pagedLink reports whether h has a Link header (RFC 8288) with a relation
// that makes the answer one page of several: next, or prev, first or last
// (it is a page, whichever).
func pagedLink(h http.Header) bool {
	for _, v := range h.Values("Link") {
		for _, link := range splitLinks(v) {
			_, params, _ := strings.Cut(link, ">")
			for _, p := range strings.Split(params, ";") {
				name, value, ok := strings.Cut(p, "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(name), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(value), `"`)) {
					switch strings.ToLower(rel) {
					case "next", "prev", "previous", "first", "last":
						return true
					}
				}
			}
		}
	}
	return false
}

// splitLinks splits a Link header's value at the commas between its links,
// not those inside a <URI>.
func splitLinks(v string) []string {
	var out []string
	inURI, start := false, 0
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '<':
			inURI = true
		case '>':
			inURI = false
		case ',':
			if !inURI {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}

// match is one record of an answer, as the protocol writes it.
type match struct {
	ID          string `json:"id"`
	CreatedAt   string `json:"created_at"`
	Recipient   string `json:"recipient"`
	PayloadHash string `json:"payload_hash"`
	// OpKey, when given, is the op_key the endpoint holds the record
	// under: from an endpoint that searches by op_key, it must be the one
	// asked.
	OpKey *string `json:"op_key"`
	// State is effect (also when absent or null), in_flight or failed.
	State *string `json:"state"`
	// Status is the endpoint's own word for the record's state, for people.
	Status string `json:"status"`
}

// states are the protocol's words for a record's state.
var states = []providers.State{providers.StateEffect, providers.StateInFlight, providers.StateFailed}

// maxStatus bounds a record's status, in bytes: it is for people, and a
// longer one is cut short rather than refused.
const maxStatus = 200
