package mailgun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	mg "github.com/mailgun/mailgun-go/v4"
	"github.com/mailgun/mailgun-go/v4/events"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the mailgun adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("mailgun", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// pageLimit is the most events Mailgun returns per page.
	pageLimit = 300
	// maxPages bounds one lookup: past it, the answer would be partial.
	maxPages = 20
	// eventFilter selects the events that say where a message stands
	// ([stateOf]): taken, delivered, and failed or refused — a failure
	// must be seen to override an accepted or delivered event.
	eventFilter = "accepted OR delivered OR failed OR rejected"
	// maxTimestamp is 3000-01-01T00:00:00Z: a later event date is no date.
	maxTimestamp = 32503680000
)

// regionBases are mailgun-go's API bases for the regions.
var regionBases = map[string]string{RegionUS: mg.APIBaseUS, RegionEU: mg.APIBaseEU}

// Adapter looks operations up in one Mailgun domain's events.
type Adapter struct {
	name     string
	key      string
	domain   string
	variable string
	public   string // the region's API base, for mailgun-go
	client   *http.Client
}

var _ providers.MatchingLookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the API key that
// api_key_env names from env. Only GETs of the domain's events reach
// env.Transport (http.DefaultTransport when nil). It fails when the key is
// not set (the error names the variable, never the value) or api_base is
// not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	key, err := config.BlockSecret(env.Var, "api_key_env", cfg.APIKeyEnv)
	if err != nil {
		return nil, err
	}
	public, err := url.Parse(cmp.Or(regionBases[cfg.Region], mg.APIBaseUS))
	if err != nil {
		return nil, err
	}
	apiBase, err := providers.ParseAPIBase(cfg.APIBase)
	if err != nil {
		return nil, err
	}
	return &Adapter{
		name:     name,
		key:      key,
		domain:   cfg.Domain,
		variable: cmp.Or(cfg.Variable, DefaultVariable),
		public:   public.String(),
		client: &http.Client{
			Transport: providers.ReadOnlyTransport{Base: &apiTransport{
				name:    name,
				public:  public,
				apiBase: apiBase,
				events:  strings.TrimRight(public.EscapedPath(), "/") + "/" + cfg.Domain + "/events",
				next:    env.RoundTripper(),
			}},
			CheckRedirect: providers.RefuseRedirects("api_base"),
		},
	}, nil
}

// sdk returns mailgun-go's client for the domain, on the adapter's HTTP
// client: every request it makes goes through the read-only check first.
func (a *Adapter) sdk() *mg.MailgunImpl {
	c := mg.NewMailgun(a.domain, a.key)
	c.SetAPIBase(a.public)
	c.SetClient(a.client)
	return c
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

// Matching implements providers.MatchingLookup: every record carries the
// op_key in its user variables, compared exactly.
func (a *Adapter) Matching() providers.Matching { return providers.Matching{ByKey: true} }

// message is one message found, from its events that carry the op_key.
type message struct {
	id        string
	recipient string
	subject   string
	at        time.Time // its first event
	events    []string  // event names, in the order seen
	// severity is a failed event's: "permanent" once any failure was
	// permanent, else "temporary" if one was; reason is that event's.
	severity, reason string
}

// Lookup implements providers.Lookup. It returns the messages to
// q.Recipient whose accepted or delivered events carry q.OpKey (see the
// package doc), or an error classified for the pipeline that names
// neither the key nor the recipient.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		return nil, providers.Redact(err, a.key, q.Recipient, strings.TrimSpace(q.Recipient))
	}
	return records, nil
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if err := providers.RequireOpKey(a.name, q); err != nil {
		return nil, err
	}
	to := strings.TrimSpace(q.Recipient)
	if to == "" {
		return nil, providers.Permanent(fmt.Errorf("%s: the operation has no recipient; Mailgun's events are searched by recipient", a.name))
	}
	now, err := providers.Window(a.name, q)
	if err != nil {
		return nil, err
	}

	it := a.sdk().ListEvents(&mg.ListEventOptions{
		// Mailgun takes whole seconds: the end is rounded up.
		Begin:          q.Since.UTC(),
		End:            now.UTC().Add(time.Second),
		ForceAscending: true,
		Limit:          pageLimit,
		Filter:         map[string]string{"recipient": to, "event": eventFilter},
	})
	found := map[string]*message{}
	var order []string
	var page []mg.Event
	for pages := 0; ; pages++ {
		if pages == maxPages {
			return nil, providers.Permanent(fmt.Errorf("%s: more than %d pages of %d events to the recipient in the window; too many to settle automatically", a.name, maxPages, pageLimit))
		}
		current := it.Paging.Next
		if !it.Next(ctx, &page) {
			if err := it.Err(); err != nil {
				return nil, a.sdkError(ctx, err)
			}
			break // an empty page: the end
		}
		for i, e := range page {
			m, err := a.fromEvent(e, q.OpKey)
			if err != nil {
				return nil, providers.Transient(fmt.Errorf("%s: malformed answer: page %d, event %d: %w", a.name, pages+1, i, err))
			}
			if m == nil {
				continue
			}
			prev, seen := found[m.id]
			if !seen {
				found[m.id] = m
				order = append(order, m.id)
				continue
			}
			if prev.recipient == "" {
				prev.recipient = m.recipient // a rejected event's is its To header
			}
			if prev.subject != m.subject || (m.recipient != "" && prev.recipient != m.recipient) {
				return nil, providers.Transient(fmt.Errorf("%s: malformed answer: the events of one message disagree on its subject or recipient", a.name))
			}
			if m.at.Before(prev.at) {
				prev.at = m.at
			}
			if !slices.Contains(prev.events, m.events[0]) {
				prev.events = append(prev.events, m.events[0])
			}
			if m.severity == "permanent" || (m.severity != "" && prev.severity != "permanent") {
				prev.severity, prev.reason = m.severity, m.reason
			} else if m.reason != "" && prev.reason == "" {
				prev.reason = m.reason
			}
		}
		if it.Paging.Next == current {
			break // the next page is this one again: nothing more to read
		}
	}

	records := make([]providers.Record, 0, len(order))
	for _, id := range order {
		rec, err := record(found[id])
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %w", a.name, err))
		}
		records = append(records, rec)
	}
	return records, nil
}

// fromEvent reads an accepted, delivered, failed or rejected event that
// carries opKey in the user variable; nil for any other event.
func (a *Adapter) fromEvent(e mg.Event, opKey string) (*message, error) {
	var (
		g                events.Generic
		recipient        string
		headers          events.MessageHeaders
		vars             any
		severity, reason string
	)
	switch ev := e.(type) {
	case *events.Accepted:
		g, recipient, headers, vars = ev.Generic, ev.Recipient, ev.Message.Headers, ev.UserVariables
	case *events.Delivered:
		g, recipient, headers, vars = ev.Generic, ev.Recipient, ev.Message.Headers, ev.UserVariables
	case *events.Failed:
		g, recipient, headers, vars = ev.Generic, ev.Recipient, ev.Message.Headers, ev.UserVariables
		severity, reason = ev.Severity, ev.Reason
		if severity == "" {
			return nil, errors.New("a failed event without a severity")
		}
	case *events.Rejected:
		// A refused send has no recipient of its own: its To header.
		g, recipient, headers, vars = ev.Generic, ev.Message.Headers.To, ev.Message.Headers, ev.UserVariables
		reason = ev.Reject.Reason
	default:
		return nil, nil
	}
	// The value is compared exactly; a variable that is not a string, or
	// under another name, is no match.
	values, _ := vars.(map[string]any)
	if v, ok := values[a.variable].(string); !ok || v != opKey {
		return nil, nil
	}
	if err := ledger.CheckRecordID(headers.MessageID); err != nil {
		return nil, fmt.Errorf("message-id: %w", err)
	}
	if !(g.Timestamp > 0 && g.Timestamp < maxTimestamp) {
		return nil, errors.New("timestamp is not a date")
	}
	return &message{
		id:        headers.MessageID,
		recipient: recipient,
		subject:   headers.Subject,
		at:        eventTime(g.Timestamp),
		events:    []string{g.GetName()},
		severity:  severity,
		reason:    reason,
	}, nil
}

// eventTime reads Mailgun's timestamp, seconds with microseconds.
func eventTime(ts float64) time.Time {
	secs := math.Floor(ts)
	micros := math.Round((ts - secs) * 1e6)
	return time.Unix(int64(secs), int64(micros)*1000).UTC()
}

// record turns a message into a record: its state ([stateOf]), the
// subject, and its hash unless the message failed.
func record(m *message) (providers.Record, error) {
	state, status, err := stateOf(m)
	if err != nil {
		return providers.Record{}, err
	}
	rec := providers.Record{
		ID:        m.id,
		CreatedAt: m.at,
		Recipient: m.recipient,
		Fields:    map[string]any{"subject": m.subject},
		Excerpt:   "mailgun message events=" + strings.Join(m.events, ","),
		State:     state,
		Status:    status,
	}
	if m.severity != "" {
		rec.Excerpt += " severity=" + providers.Word(m.severity, 32)
	}
	if m.reason != "" {
		rec.Excerpt += " reason=" + providers.Word(m.reason, 32)
	}
	// A failed attempt carries no hash: it never agrees. An unhashable
	// subject leaves the hash empty: never agreement.
	if state != providers.StateFailed {
		rec.PayloadHash, _ = ledger.PayloadHashOf(rec.Fields)
	}
	return rec, nil
}

// sdkError classifies an error mailgun-go returned. Its errors quote the
// request's URL, query and recipient included, so only the transport's
// classified error inside is kept.
func (a *Adapter) sdkError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
	}
	var classified *providers.Error
	if errors.As(err, &classified) {
		return classified
	}
	return providers.Transient(fmt.Errorf("%s: could not read Mailgun's events", a.name))
}
