package hubspot

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"github.com/sweeper/sweeper/providers"
)

// object is a CRM record as HubSpot answers it, in a search's results or to
// a read.
type object struct {
	ID         string             `json:"id"`
	Properties map[string]*string `json:"properties"`
	CreatedAt  string             `json:"createdAt"`
	UpdatedAt  string             `json:"updatedAt"`
	Archived   *bool              `json:"archived"`
}

// objectKeys are the keys HubSpot documents on a record (SimplePublicObject
// and its variants); any other is a malformed answer.
var objectKeys = []string{"id", "properties", "propertiesWithHistory", "createdAt", "updatedAt", "archived", "archivedAt", "associations", "url", "objectWriteTraceId"}

// page is one page of the CRM search.
type page struct {
	Total   int
	Results []object
	Next    string // paging.next.after; "" on the last page
}

// idRE is a CRM record id: a positive decimal number.
var idRE = regexp.MustCompile(`^[1-9][0-9]{0,19}$`)

// onlyKeys reads data as one strict JSON object whose keys are all among
// allowed, and returns it.
func onlyKeys(data []byte, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := providers.DecodeJSON(data, &m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not an object")
	}
	// In order, so that one body always gives one error.
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !contains(allowed, k) {
			return nil, fmt.Errorf("unknown key %s", strconv.QuoteToASCII(providers.Word(k, 32)))
		}
	}
	return m, nil
}

// decodeObject reads one record strictly: exactly one JSON object (no key
// twice, no two keys differing only in letter case, no key HubSpot does not
// document), with a numeric id, a properties object of strings or nulls,
// createdAt and archived.
func decodeObject(data []byte) (object, error) {
	if _, err := onlyKeys(data, objectKeys...); err != nil {
		return object{}, err
	}
	var o object
	if err := providers.DecodeJSON(data, &o); err != nil {
		return object{}, err
	}
	switch {
	case !idRE.MatchString(o.ID):
		return object{}, errors.New("id is not a record id")
	case o.Properties == nil:
		return object{}, errors.New("no properties object")
	case o.CreatedAt == "":
		return object{}, errors.New("no createdAt")
	case o.Archived == nil:
		return object{}, errors.New("archived is not a boolean")
	}
	return o, nil
}

// decodePage reads the search's answer strictly: one JSON object with a
// total and a results array and, when more pages exist, paging.next.after
// — and no other key at any level of it, since a pagination signal the
// adapter does not follow could hide records.
func decodePage(data []byte) (*page, error) {
	top, err := onlyKeys(data, "total", "results", "paging")
	if err != nil {
		return nil, err
	}
	var p page
	total, ok := top["total"]
	if !ok {
		return nil, errors.New("no total")
	}
	if err := providers.DecodeJSON(total, &p.Total); err != nil || p.Total < 0 {
		return nil, errors.New("total is not a count")
	}
	var results []json.RawMessage
	if err := providers.DecodeJSON(top["results"], &results); err != nil || results == nil {
		return nil, errors.New("no results array")
	}
	if len(results) > pageSize {
		return nil, fmt.Errorf("a page of %d results, asked for %d", len(results), pageSize)
	}
	for i, r := range results {
		o, err := decodeObject(r)
		if err != nil {
			return nil, fmt.Errorf("results[%d]: %w", i, err)
		}
		p.Results = append(p.Results, o)
	}
	if raw, ok := top["paging"]; ok {
		paging, err := onlyKeys(raw, "next")
		if err != nil {
			return nil, fmt.Errorf("paging: %w", err)
		}
		if raw, ok := paging["next"]; ok {
			next, err := onlyKeys(raw, "after", "link")
			if err != nil {
				return nil, fmt.Errorf("paging.next: %w", err)
			}
			if err := providers.DecodeJSON(next["after"], &p.Next); err != nil || p.Next == "" {
				return nil, errors.New("paging.next without an after cursor")
			}
		}
	}
	return &p, nil
}
