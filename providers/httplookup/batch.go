package httplookup

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"time"

	"github.com/sweeper/sweeper/providers"
)

// MaxBatch implements providers.BatchLookup: max_batch.
func (a *Adapter) MaxBatch() int { return a.batch }

// LookupBatch implements providers.BatchLookup with the batch form: one GET
// per batch (several when the op_keys would make the URL longer than
// [MaxURL]), answered with an entry per op_key. An endpoint of the single
// form (max_batch 1) is asked once per operation instead. No error it
// returns carries the token or a recipient.
func (a *Adapter) LookupBatch(ctx context.Context, qs []providers.Query) ([]providers.BatchAnswer, error) {
	recipients := make([]string, 0, 2*len(qs)+1)
	recipients = append(recipients, a.token)
	for _, q := range qs {
		recipients = append(recipients, q.Recipient, url.QueryEscape(q.Recipient))
	}
	if a.batch == 1 {
		// The single form: the endpoint knows no other.
		answers := make([]providers.BatchAnswer, len(qs))
		for i, q := range qs {
			answers[i].Records, answers[i].Err = a.Lookup(ctx, q)
		}
		return answers, nil
	}
	if len(qs) > a.batch {
		return nil, providers.Permanent(fmt.Errorf("%s: %d operations in one request; max_batch is %d", a.name, len(qs), a.batch))
	}
	answers := make([]providers.BatchAnswer, 0, len(qs))
	for rest := qs; len(rest) > 0; {
		u, n := a.batchURL(rest)
		body, err := a.get(ctx, u)
		if err == nil {
			var part []providers.BatchAnswer
			part, err = a.parseBatch(body, rest[:n])
			answers = append(answers, part...)
		}
		if err != nil {
			return nil, providers.Redact(err, recipients...)
		}
		rest = rest[n:]
	}
	for i := range answers {
		answers[i].Err = providers.Redact(answers[i].Err, recipients...)
	}
	return answers, nil
}

// batchURL is the batch form's URL for as many of qs, from the first, as
// fit in [MaxURL] (at least one), and how many that is. since and until
// span every query's window: an endpoint that filters by them returns no
// less than each operation's own search would, and the decision checks
// each record's date against its own operation's window.
func (a *Adapter) batchURL(qs []providers.Query) (string, int) {
	since, until := providers.Span(qs)
	u := *a.url
	params := u.Query()
	params.Set("since", since.UTC().Format(time.RFC3339))
	params.Set("until", until.UTC().Format(time.RFC3339))
	n := 0
	for n < len(qs) {
		params.Add("op_key", qs[n].OpKey)
		u.RawQuery = params.Encode()
		if n > 0 && len(u.String()) > MaxURL {
			params["op_key"] = params["op_key"][:n]
			break
		}
		n++
	}
	u.RawQuery = params.Encode()
	return u.String(), n
}

// batchEntry is one op_key's entry in a batch answer: its matches, or the
// error the endpoint had for it.
type batchEntry struct {
	OpKey   *string `json:"op_key"`
	Matches []match `json:"matches"`
	Error   *string `json:"error"`
	// keys is why the entry holds a key the protocol does not name for it
	// (a page's has_more, say); nil when it holds none.
	keys error
}

// parseBatch reads a batch answer strictly, as parse reads a single one. The
// answer is an error for the whole request when it is not the batch form
// or holds an entry for an op_key not asked: it does not say which
// operations it answers for. Otherwise each query gets its entry's
// records, or a transient error when its entry is missing, listed twice,
// holds both or neither of matches and error, holds a bad match, or is the
// endpoint's error for it.
func (a *Adapter) parseBatch(body []byte, qs []providers.Query) ([]providers.BatchAnswer, error) {
	var answer struct {
		Results []batchEntry `json:"results"` // nil: missing or null
	}
	if err := providers.DecodeJSON(body, &answer); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed batch response: %w", a.name, err))
	}
	if answer.Results == nil {
		return nil, providers.Transient(fmt.Errorf("%s: batch response has no results field", a.name))
	}
	if err := checkKeys(body, "results"); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed batch response: %w", a.name, err))
	}
	// Each entry's keys, read again: an entry beside its matches may say
	// they go on.
	var raw struct {
		Results []json.RawMessage `json:"results"`
	}
	if err := providers.DecodeJSON(body, &raw); err != nil || len(raw.Results) != len(answer.Results) {
		return nil, providers.Transient(fmt.Errorf("%s: malformed batch response: results could not be read again", a.name))
	}
	index := make(map[string]int, len(qs))
	for i, q := range qs {
		index[q.OpKey] = i
	}
	entries := make([][]batchEntry, len(qs))
	for i, e := range answer.Results {
		if err := checkKeys(raw.Results[i], "op_key", "matches", "error"); err != nil {
			e.keys = err
		}
		if e.OpKey == nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed batch response: results[%d] has no op_key", a.name, i))
		}
		j, asked := index[*e.OpKey]
		if !asked {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed batch response: results[%d] is for an op_key that was not asked", a.name, i))
		}
		entries[j] = append(entries[j], e)
	}
	answers := make([]providers.BatchAnswer, len(qs))
	for i, es := range entries {
		answers[i] = a.entryAnswer(es, qs[i].OpKey)
	}
	return answers, nil
}

// entryAnswer is one query's answer from the entries for its op_key.
func (a *Adapter) entryAnswer(es []batchEntry, opKey string) providers.BatchAnswer {
	malformed := func(why string) providers.BatchAnswer {
		return providers.BatchAnswer{Err: providers.Transient(fmt.Errorf("%s: malformed batch response: %s", a.name, why))}
	}
	switch {
	case len(es) == 0:
		return malformed("no entry for the op_key")
	case len(es) > 1:
		return malformed("the op_key has several entries")
	case es[0].keys != nil:
		return malformed("the op_key's entry: " + es[0].keys.Error())
	case es[0].Error != nil && es[0].Matches != nil:
		return malformed("the op_key's entry has both matches and an error")
	case es[0].Error != nil:
		// The endpoint's own words: free text, kept apart as a length
		// and a digest.
		return providers.BatchAnswer{Err: providers.Transient(fmt.Errorf("%s: the endpoint failed for this operation: %w", a.name, providers.Quote(*es[0].Error)))}
	case es[0].Matches == nil:
		return malformed("the op_key's entry has no matches field")
	}
	records, err := a.records(es[0].Matches, opKey)
	return providers.BatchAnswer{Records: records, Err: err}
}
