package twilio

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	twclient "github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the twilio adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("twilio", newConfig, New)

const (
	// sdkBase is where twilio-go sends the Messages API; the transport
	// sends it to api_base instead.
	sdkBase = "https://api.twilio.com"
	// pageSize is Twilio's largest page.
	pageSize = 1000
	// maxPages bounds one lookup: past it, the answer would be partial.
	maxPages = 20
	// maxRecords bounds what one lookup returns; past it a person decides.
	maxRecords = 20
)

// Adapter looks operations up in one Twilio account's Messages.
type Adapter struct {
	name      string
	sid       string
	token     string
	from      string
	apiBase   *url.URL
	transport http.RoundTripper // shared by every lookup, so connections are reused
	logger    *slog.Logger
}

var _ providers.Lookup = (*Adapter)(nil)

// New returns an adapter for cfg (validated), reading the Account SID and
// the auth token that account_sid_env and auth_token_env name from env.
// Only GETs reach env.Transport (http.DefaultTransport when nil). It fails
// when either is not set (the error names the variable, never the value)
// or api_base is not a URL.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	sid, err := config.BlockSecret(env.Var, "account_sid_env", cfg.AccountSIDEnv)
	if err != nil {
		return nil, err
	}
	token, err := config.BlockSecret(env.Var, "auth_token_env", cfg.AuthTokenEnv)
	if err != nil {
		return nil, err
	}
	base, err := providers.ParseAPIBase(cmp.Or(cfg.APIBase, DefaultAPIBase))
	if err != nil {
		return nil, err
	}
	return &Adapter{
		name:      name,
		sid:       sid,
		token:     token,
		from:      cfg.From,
		apiBase:   base,
		transport: env.RoundTripper(),
		logger:    env.Log(),
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { providers.CloseIdle(a.transport) }

// Lookup implements providers.Lookup. It returns the messages to
// q.Recipient created in [q.Since, q.Until] (see the package doc for which),
// or an error classified for the pipeline.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	records, err := a.lookup(ctx, q)
	if err != nil {
		return nil, a.withhold(err, q.Recipient)
	}
	return records, nil
}

func (a *Adapter) lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if strings.TrimSpace(q.Recipient) == "" {
		return nil, providers.Permanent(fmt.Errorf("%s: the operation has no recipient; Twilio messages cannot be searched without one", a.name))
	}
	to, err := toAddress(q.Recipient)
	if err != nil {
		return nil, providers.Permanent(fmt.Errorf("%s: the recipient cannot be searched: Twilio's To filter matches E.164 numbers exactly: %w", a.name, err))
	}
	switch {
	case q.Since.IsZero():
		return nil, providers.Permanent(fmt.Errorf("%s: the query has no start time", a.name))
	}
	since := q.Since.UTC().Truncate(time.Second) // Twilio's dates have whole seconds
	until := q.Until.UTC()
	if q.Until.IsZero() {
		until = time.Now().UTC()
	}
	if until.Before(since) {
		return nil, providers.Permanent(fmt.Errorf("%s: the query ends before it starts", a.name))
	}

	api := a.api(ctx)
	params := &openapi.ListMessageParams{}
	params.SetPathAccountSid(a.sid)
	params.SetTo(to)
	if a.from != "" {
		params.SetFrom(a.from)
	}
	// "DateSent>" and "DateSent<" are Twilio's >= and <= (the key holds the
	// comparison); whole UTC days, so a day-granular filter misses nothing.
	params.SetDateSentAfter(day(since))
	params.SetDateSentBefore(day(until).AddDate(0, 0, 1))
	params.SetPageSize(pageSize)

	page, err := api.PageMessage(params, "", "")
	if err != nil {
		return nil, a.sdkError(ctx, err)
	}
	var candidates []providers.Record
	listed := 0
	for pages := 1; ; pages++ {
		for i, m := range page.Messages {
			listed++
			rec, created, candidate, err := a.record(m)
			if err != nil {
				return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: page %d, message %d: %w", a.name, pages, i, err))
			}
			if !candidate || created.Before(since) || created.After(until) {
				continue // outside the precise window
			}
			candidates = append(candidates, rec)
		}
		if page.NextPageUri == nil || *page.NextPageUri == "" {
			break
		}
		if pages == maxPages {
			return nil, providers.Permanent(fmt.Errorf("%s: more than %d pages of %d messages to the recipient in the window; too many to settle automatically", a.name, maxPages, pageSize))
		}
		if err := ctx.Err(); err != nil {
			return nil, providers.Transient(fmt.Errorf("%s: %w", a.name, err))
		}
		if page, err = a.nextPage(ctx, api, *page.NextPageUri); err != nil {
			return nil, err
		}
	}

	// A message on two pages (a page boundary that moved) is one record;
	// two different messages under one sid are no answer to act on.
	candidates, err = providers.MergeDuplicates(candidates)
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}
	records := candidates
	if matching := slices.DeleteFunc(slices.Clone(candidates), func(r providers.Record) bool {
		return q.PayloadHash == "" || r.PayloadHash != q.PayloadHash
	}); len(matching) > 0 {
		records = matching
	}
	a.logger.DebugContext(ctx, "twilio lookup", "listed", listed, "candidates", len(candidates), "returned", len(records))
	if len(records) > maxRecords {
		return nil, providers.Permanent(fmt.Errorf("%s: too many candidates: %d messages to the recipient in the window (at most %d)", a.name, len(records), maxRecords))
	}
	slices.SortStableFunc(records, func(x, y providers.Record) int { return x.CreatedAt.Compare(y.CreatedAt) })
	if records == nil {
		records = []providers.Record{}
	}
	return records, nil
}

// api returns twilio-go's Messages API with a transport bound to ctx. The
// SDK client holds no credentials: the transport adds them, after the
// read-only check, so a refused request never carries them (and twilio-go's
// check that they are alphanumeric does not apply).
func (a *Adapter) api(ctx context.Context) *openapi.ApiService {
	c := &twclient.Client{
		Credentials: twclient.NewCredentials("", ""),
		HTTPClient: &http.Client{
			Transport: providers.ReadOnlyTransport{Base: &apiTransport{
				ctx:     ctx,
				name:    a.name,
				apiBase: a.apiBase,
				sid:     a.sid,
				token:   a.token,
				next:    a.transport,
			}},
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("redirects are not followed")
			},
		},
	}
	c.SetAccountSid(a.sid)
	// Built by hand rather than with NewRequestHandler, which reads
	// TWILIO_EDGE and TWILIO_REGION and would move the host.
	return openapi.NewApiService(&twclient.RequestHandler{Client: c})
}

// nextPage follows a next_page_uri, which must name this account's
// Messages list on the same API.
func (a *Adapter) nextPage(ctx context.Context, api *openapi.ApiService, uri string) (*openapi.ListMessageResponse, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path != messagesPath(a.sid) {
		return nil, providers.Transient(fmt.Errorf("%s: next_page_uri is not a page of the account's messages", a.name))
	}
	resp, err := api.RequestHandler().Get(sdkBase+u.String(), nil, nil, "")
	if err != nil {
		return nil, a.sdkError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body) // bounded and checked by the transport
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: read page: %w", a.name, err))
	}
	page := &openapi.ListMessageResponse{}
	if err := providers.DecodeJSON(body, page); err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed page: %w", a.name, err))
	}
	return page, nil
}

func messagesPath(sid string) string { return "/2010-04-01/Accounts/" + sid + "/Messages.json" }

// record turns a listed message into a record, with its creation time.
// A message that is not an attempt to reach the recipient (an inbound
// one) is no candidate; a status or direction Twilio does not document is
// an error.
func (a *Adapter) record(m openapi.ApiV2010Message) (rec providers.Record, created time.Time, candidate bool, err error) {
	sid := deref(m.Sid)
	if strings.TrimSpace(sid) == "" {
		return providers.Record{}, time.Time{}, false, errors.New("message has no sid")
	}
	status, direction := deref(m.Status), deref(m.Direction)
	switch {
	case direction == "inbound" || inboundStatuses[status]:
		return providers.Record{}, time.Time{}, false, nil
	case !outbound[direction]:
		return providers.Record{}, time.Time{}, false, fmt.Errorf("direction %q is none of Twilio's", providers.Word(direction, 24))
	}
	state, known := messageStates[status]
	if !known {
		return providers.Record{}, time.Time{}, false, fmt.Errorf("status %q is none of Twilio's", providers.Word(status, 24))
	}
	created, err = parseDate(deref(m.DateCreated))
	if err != nil {
		return providers.Record{}, time.Time{}, false, fmt.Errorf("date_created: %w", err)
	}
	rec = providers.Record{
		ID:        sid,
		CreatedAt: created,
		Recipient: deref(m.To),
		Excerpt:   excerpt(m),
		State:     state,
		Status:    status,
	}
	if m.Body != nil {
		rec.Fields = map[string]any{"body": *m.Body}
		// A failed attempt carries no hash: it never agrees, and a
		// delivered message with the same body is not hidden behind it.
		// An unhashable body leaves PayloadHash empty: never agreement.
		if state != providers.StateFailed {
			rec.PayloadHash, _ = ledger.PayloadHashOf(rec.Fields)
		}
	}
	return rec, created, true, nil
}

// parseDate reads Twilio's RFC 2822 timestamps ("Thu, 30 Jul 2015 20:12:31 +0000").
func parseDate(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("missing")
	}
	for _, layout := range []string{time.RFC1123Z, time.RFC1123} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errors.New("not an RFC 2822 date")
}

// excerpt is what people see of a message: its state, never its number or
// its text.
func excerpt(m openapi.ApiV2010Message) string {
	s := fmt.Sprintf("twilio message status=%s direction=%s segments=%s",
		providers.Word(deref(m.Status), 24), providers.Word(deref(m.Direction), 24), providers.Word(deref(m.NumSegments), 24))
	if m.ErrorCode != nil {
		s += fmt.Sprintf(" error_code=%d", *m.ErrorCode)
	}
	return s
}

// sdkError classifies an error twilio-go returned. The SDK's errors are
// *url.Error around the transport's, naming the URL — Account SID and
// recipient included — so only the cause is kept.
func (a *Adapter) sdkError(ctx context.Context, err error) error {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	if ctx.Err() != nil {
		return providers.Transient(fmt.Errorf("%s: %w", a.name, ctx.Err()))
	}
	var classified *providers.Error
	if errors.As(err, &classified) {
		return err
	}
	return providers.Transient(fmt.Errorf("%s: %w", a.name, err))
}

// withhold replaces an error whose text names the token, the Account SID
// or the recipient — in any form providers.RedactText finds: any letter
// case, URL-encoded, the number's digits grouped otherwise (Twilio echoes
// the E.164 form the adapter searched) — with one that keeps only its
// class: the last guard of I7, for errors from deep in twilio-go or
// net/http.
func (a *Adapter) withhold(err error, recipient string) error {
	msg := err.Error()
	if providers.RedactText(msg, a.token, a.sid, recipient) == msg {
		return err
	}
	class, delay := providers.Classify(err)
	return &providers.Error{Class: class, RetryAfter: delay,
		Err: fmt.Errorf("%s: %s lookup error (details withheld: they named a credential or the recipient)", a.name, class)}
}

// toAddress is the To filter for a recipient: its number in E.164
// ([ledger.NormalizePhone]), after a channel prefix kept as written
// ("whatsapp:+1 555 0100 777" → "whatsapp:+15550100777"). Twilio stores
// and matches E.164 exactly, so "+1 (555) 010-0002" searched as written
// would find nothing though the message exists. The error says why a
// recipient is not a number, without quoting it.
func toAddress(recipient string) (string, error) {
	recipient = strings.TrimSpace(recipient)
	prefix := ""
	if channel, rest, ok := strings.Cut(recipient, ":"); ok && channel != "" && strings.Trim(channel, "abcdefghijklmnopqrstuvwxyz") == "" {
		prefix, recipient = channel+":", rest
	}
	number, err := ledger.NormalizePhone(recipient)
	if err != nil {
		return "", err
	}
	return prefix + number, nil
}

// dotDigit is what twilio-go's query encoding deletes (it strips array
// indexes such as To.0 with a regular expression over the whole query).
var dotDigit = regexp.MustCompile(`\.\d`)

// searchable reports whether s survives twilio-go's query encoding.
func searchable(s string) bool { return !dotDigit.MatchString(s) }

// day is the start of t's UTC day.
func day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
