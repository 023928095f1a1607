package stripe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	stripego "github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/form"

	"github.com/sweeper/sweeper/config"
	"github.com/sweeper/sweeper/internal/safetext"
	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
)

// Kind is the stripe adapter's kind, for the list in providers/kinds.
var Kind = providers.NewKind("stripe", newConfig, New).WithSettleWindow(DefaultSettleWindow)

const (
	// pageSize is the most Stripe's search returns per page.
	pageSize = 100
	// maxPages bounds the pages read per object type: one op_key matching
	// more than maxPages×pageSize objects is not an answer to act on.
	maxPages = 10
)

// Adapter looks operations up with Stripe's Search API.
type Adapter struct {
	name        string
	key         string
	host        string
	metadataKey string
	mode        string // the key's: "live", "test", or "" when its prefix says neither
	objects     []string
	batch       int
	client      *http.Client
	backend     stripego.Backend
	// apiBase and transport serve the one account request (namespace.go),
	// which is not a search and so does not go through client's check.
	apiBase   string
	transport http.RoundTripper
}

var (
	_ providers.MatchingLookup = (*Adapter)(nil)
	_ providers.BatchLookup    = (*Adapter)(nil)
)

// New returns an adapter for cfg (validated), reading the secret key that
// secret_key_env names from env. Requests go to env.Transport
// (http.DefaultTransport when nil) under the read-only check, so that only
// GETs leave and only search results reach the SDK. It fails when the key
// is not set; the error names the variable, never the value.
func New(name string, cfg *Config, env providers.Env) (*Adapter, error) {
	key, err := config.BlockSecret(env.Var, "secret_key_env", cfg.SecretKeyEnv)
	if err != nil {
		return nil, err
	}
	base := cmp.Or(cfg.APIBase, stripego.APIURL)
	host := base
	if u, err := url.Parse(base); err == nil {
		host = u.Host
	}
	d := *cfg
	d.ApplyDefaults()
	objects := cfg.Objects
	if len(objects) == 0 {
		objects = []string{ObjectPaymentIntents}
	}
	client := &http.Client{
		Transport: providers.ReadOnlyTransport{Base: responseCheck{base: env.RoundTripper()}},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
	backend := stripego.GetBackendWithConfig(stripego.APIBackend, &stripego.BackendConfig{
		HTTPClient: client,
		// The SDK logs response bodies at debug level and error bodies at
		// error level: customers' emails. Errors are returned instead.
		LeveledLogger:     &stripego.LeveledLogger{Level: stripego.LevelNull},
		MaxNetworkRetries: stripego.Int64(0),
		EnableTelemetry:   stripego.Bool(false),
		URL:               stripego.String(base),
	})
	return &Adapter{
		name:        name,
		key:         key,
		host:        host,
		metadataKey: cmp.Or(cfg.MetadataKey, DefaultMetadataKey),
		mode:        keyMode(key),
		objects:     objects,
		batch:       min(d.MaxBatch, MaxClauses),
		client:      client,
		backend:     backend,
		apiBase:     base,
		transport:   env.RoundTripper(),
	}, nil
}

// Close releases the adapter's idle connections.
func (a *Adapter) Close() { a.client.CloseIdleConnections() }

// found is one Stripe object a search returned, in the fields the adapter
// uses, whatever its type.
type found struct {
	object        string // "payment_intent", "charge", "invoice"
	id            string
	created       int64
	amount        int64 // an invoice's total
	currency      string
	status        string
	customer      string
	receiptEmail  string // an invoice's customer_email
	paymentIntent string // a charge's PaymentIntent
	opKey         string // metadata[metadata_key], if the object carried it
	hasOpKey      bool
	// accepted: the status shows Stripe took the payment.
	accepted bool
	livemode bool
	// A Charge's (a PaymentIntent's latest charge's) capture, refunds and
	// dispute.
	captured, refunded, disputed bool
	amountRefunded               int64
	// paymentError: a PaymentIntent's last_payment_error is set, an
	// attempt to pay failed.
	paymentError bool
	// latestCharge is a PaymentIntent's latest charge, expanded; nil when
	// it has none.
	latestCharge *found
}

// Lookup implements providers.Lookup.
func (a *Adapter) Lookup(ctx context.Context, q providers.Query) ([]providers.Record, error) {
	if err := providers.RequireOpKey(a.name, q); err != nil {
		return nil, err
	}
	query := searchQuery(a.metadataKey, q.OpKey)
	var all []found
	for _, object := range a.objects {
		var objs []found
		var err error
		if object == ObjectInvoices && isCustomerID(q.Recipient) {
			objs, err = a.listInvoices(ctx, q.Recipient, q.Since, q.Until)
		} else {
			objs, err = a.search(ctx, object, query, maxPages, "for one op_key")
		}
		if err != nil {
			return nil, err
		}
		all = append(all, objs...)
	}
	if err := a.checkMode(all); err != nil {
		return nil, err
	}
	return a.recordsFor(q, all)
}

// recordsFor makes the records of the operation q from the objects a
// search found.
func (a *Adapter) recordsFor(q providers.Query, all []found) ([]providers.Record, error) {
	opKey := q.OpKey
	// Only an object whose metadata holds the op_key, exactly, is the
	// operation's: Stripe's matching is looser than equality (letter case,
	// for one), and an object without the key proves nothing about it.
	mine := func(f found) bool { return f.hasOpKey && f.opKey == opKey }
	paymentIntents := map[string]bool{}
	for _, f := range all {
		if f.object == "payment_intent" && mine(f) {
			paymentIntents[f.id] = true
		}
	}
	var records []providers.Record
	for _, f := range all {
		if !mine(f) || (f.object == "charge" && paymentIntents[f.paymentIntent]) {
			continue
		}
		rec, err := record(f, isAuthorisation(q.Action))
		if err != nil {
			return nil, providers.Malformed(fmt.Errorf("%s: malformed answer: %s %s: %w", a.name, f.object, providers.Word(f.id, 64), err))
		}
		records = append(records, rec)
	}
	// An object on two pages (the index moved) is one record; two
	// different objects under one id are no answer to act on.
	records, err := providers.MergeDuplicates(records)
	if err != nil {
		return nil, providers.Transient(fmt.Errorf("%s: malformed answer: %w", a.name, err))
	}

	return records, nil
}

// search reads every page of one object type's search.
// More than pages pages is a permanent error; of says for what they were
// ("for one op_key").
func (a *Adapter) search(ctx context.Context, object, query string, pages int, of string) ([]found, error) {
	var all []found
	var next *string
	for page := 0; ; page++ {
		if page == pages {
			return nil, providers.Permanent(fmt.Errorf("%s: search %s: more than %d pages of matches %s", a.name, object, pages, of))
		}
		objs, meta, err := a.searchPage(ctx, object, query, next)
		if err != nil {
			return nil, a.lookupError(ctx, "search "+object, err)
		}
		all = append(all, objs...)
		if !meta.HasMore {
			return all, nil
		}
		if meta.NextPage == nil || *meta.NextPage == "" || (next != nil && *meta.NextPage == *next) {
			return nil, providers.Transient(fmt.Errorf("%s: search %s: has_more without a new next_page", a.name, object))
		}
		next = meta.NextPage
	}
}

// searchPage reads one page, with the SDK's types for the object.
func (a *Adapter) searchPage(ctx context.Context, object, query string, page *string) ([]found, stripego.SearchMeta, error) {
	search := stripego.SearchParams{Context: ctx, Query: query, Limit: stripego.Int64(pageSize)}
	switch object {
	case ObjectPaymentIntents:
		var res stripego.PaymentIntentSearchResult
		params := &stripego.PaymentIntentSearchParams{SearchParams: search, Page: page}
		// A PaymentIntent shows neither refunds nor disputes: its latest
		// charge, expanded in the same answer, does.
		params.AddExpand("data.latest_charge")
		if err := a.get("/v1/payment_intents/search", params, &res); err != nil {
			return nil, stripego.SearchMeta{}, err
		}
		objs := make([]found, 0, len(res.Data))
		for i, pi := range res.Data {
			if pi != nil && pi.LatestCharge != nil && pi.LatestCharge.Object != "charge" {
				return nil, stripego.SearchMeta{}, &badResponse{reason: fmt.Sprintf("data[%d]: latest_charge is not expanded", i)}
			}
			if pi == nil || pi.Object != "payment_intent" || strings.TrimSpace(pi.ID) == "" {
				return nil, stripego.SearchMeta{}, &badResponse{reason: fmt.Sprintf("data[%d] is not a payment_intent with an id", i)}
			}
			f := found{
				object: pi.Object, id: pi.ID, created: pi.Created, amount: pi.Amount,
				currency: string(pi.Currency), status: string(pi.Status), receiptEmail: pi.ReceiptEmail,
				livemode: pi.Livemode, paymentError: pi.LastPaymentError != nil,
			}
			if ch := pi.LatestCharge; ch != nil {
				f.latestCharge = &found{
					object: ch.Object, id: ch.ID, amount: ch.Amount, status: string(ch.Status), livemode: ch.Livemode,
					captured: ch.Captured, refunded: ch.Refunded, disputed: ch.Disputed, amountRefunded: ch.AmountRefunded,
				}
			}
			var err error
			if f.opKey, f.hasOpKey, err = opKeyOf(pi.Metadata, a.metadataKey); err != nil {
				return nil, stripego.SearchMeta{}, &badResponse{reason: fmt.Sprintf("data[%d]: %v", i, err)}
			}
			if pi.Customer != nil {
				f.customer = pi.Customer.ID
			}
			switch pi.Status {
			case stripego.PaymentIntentStatusSucceeded, stripego.PaymentIntentStatusProcessing, stripego.PaymentIntentStatusRequiresCapture:
				f.accepted = true
			}
			objs = append(objs, f)
		}
		return objs, res.SearchMeta, nil
	case ObjectCharges:
		var res stripego.ChargeSearchResult
		params := &stripego.ChargeSearchParams{SearchParams: search, Page: page}
		if err := a.get("/v1/charges/search", params, &res); err != nil {
			return nil, stripego.SearchMeta{}, err
		}
		objs := make([]found, 0, len(res.Data))
		for i, ch := range res.Data {
			if ch == nil || ch.Object != "charge" || strings.TrimSpace(ch.ID) == "" {
				return nil, stripego.SearchMeta{}, &badResponse{reason: fmt.Sprintf("data[%d] is not a charge with an id", i)}
			}
			f := found{
				object: ch.Object, id: ch.ID, created: ch.Created, amount: ch.Amount,
				currency: string(ch.Currency), status: string(ch.Status), receiptEmail: ch.ReceiptEmail,
				livemode: ch.Livemode, captured: ch.Captured, refunded: ch.Refunded, disputed: ch.Disputed,
				amountRefunded: ch.AmountRefunded,
			}
			var err error
			if f.opKey, f.hasOpKey, err = opKeyOf(ch.Metadata, a.metadataKey); err != nil {
				return nil, stripego.SearchMeta{}, &badResponse{reason: fmt.Sprintf("data[%d]: %v", i, err)}
			}
			if ch.Customer != nil {
				f.customer = ch.Customer.ID
			}
			if ch.PaymentIntent != nil {
				f.paymentIntent = ch.PaymentIntent.ID
			}
			switch ch.Status {
			case stripego.ChargeStatusSucceeded, stripego.ChargeStatusPending:
				f.accepted = true
			}
			objs = append(objs, f)
		}
		return objs, res.SearchMeta, nil
	case ObjectInvoices:
		var res stripego.InvoiceSearchResult
		params := &stripego.InvoiceSearchParams{SearchParams: search, Page: page}
		if err := a.get("/v1/invoices/search", params, &res); err != nil {
			return nil, stripego.SearchMeta{}, err
		}
		objs, err := a.invoicesFound(res.Data)
		if err != nil {
			return nil, stripego.SearchMeta{}, err
		}
		return objs, res.SearchMeta, nil
	}
	return nil, stripego.SearchMeta{}, providers.Permanent(fmt.Errorf("unknown object type %q", object))
}

// opKeyOf finds the op_key in an object's metadata: under key exactly, or
// else under the one key equal to it in another letter case (a workflow
// that wrote OP_KEY; Stripe's search finds it). The value is returned as it
// is, for an exact comparison. Several keys in other cases are an error: the
// answer does not say which holds the op_key.
func opKeyOf(metadata map[string]string, key string) (value string, ok bool, err error) {
	if v, ok := metadata[key]; ok {
		return v, true, nil
	}
	for k, v := range metadata {
		if !strings.EqualFold(k, key) {
			continue
		}
		if ok {
			return "", false, fmt.Errorf("metadata holds %s in several letter cases", key)
		}
		value, ok = v, true
	}
	return value, ok, nil
}

// searchParams are the SDK's search parameters for one object type.
type searchParams interface {
	GetParams() *stripego.Params
}

// get sends one search, as the SDK's own search iterators do: the
// parameters form-encoded into the query string (Backend.Call does not take
// search parameters).
func (a *Adapter) get(path string, params searchParams, res stripego.LastResponseSetter) error {
	values := &form.Values{}
	form.AppendTo(values, params)
	return a.backend.CallRaw(http.MethodGet, path, a.key, []byte(values.Encode()), params.GetParams(), res)
}

// record turns a found object into a record: its state in Stripe's state
// machine ([stateOf]; authorisation: the ledger's action asks for one),
// the normalized fields, and their hash when the object's status shows
// Stripe accepted the payment.
func record(f found, authorisation bool) (providers.Record, error) {
	state, status, err := stateOf(f, authorisation)
	if err != nil {
		return providers.Record{}, err
	}
	rec := providers.Record{
		ID:        f.id,
		Recipient: cmp.Or(f.customer, f.receiptEmail),
		Excerpt: fmt.Sprintf("%s %s %s %d %s", f.object, providers.Word(f.id, 64),
			providers.Word(f.status, 32), f.amount, providers.Word(f.currency, 8)),
		State:  state,
		Status: status,
	}
	if status != f.status {
		rec.Excerpt += " (" + status + ")"
	}
	if f.created > 0 {
		rec.CreatedAt = time.Unix(f.created, 0).UTC()
	}
	if f.currency == "" {
		return rec, nil // nothing to compare: never agreement
	}
	rec.Fields = map[string]any{"amount": f.amount, "currency": strings.ToLower(f.currency)}
	if !f.accepted {
		return rec, nil
	}
	hash, err := ledger.PayloadHashOf(rec.Fields)
	if err != nil {
		return providers.Record{}, err
	}
	rec.PayloadHash = hash
	return rec, nil
}

// searchQuery is the Stripe search query for objects whose metadata key
// holds opKey. Inside a quoted value, Stripe's query language takes a
// backslash before a quote or a backslash as that character.
func searchQuery(key, opKey string) string {
	escaped := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(opKey)
	return "metadata['" + key + "']:'" + escaped + "'"
}

// lookupError classifies an error from the SDK for one request (what:
// "search payment_intents", "list invoices").
// The SDK's own texts are not kept: they quote request URLs (with the
// query) and response bodies; Stripe's error message is kept only as a
// [providers.ProviderText].
func (a *Adapter) lookupError(ctx context.Context, what string, err error) error {
	prefix := fmt.Sprintf("%s: %s", a.name, what)
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", prefix, ctx.Err())
	}
	var (
		stripeErr *stripego.Error
		status    *statusError
		bad       *badResponse
		urlErr    *url.Error
	)
	switch {
	case errors.As(err, &stripeErr):
		var header http.Header
		if stripeErr.LastResponse != nil {
			header = stripeErr.LastResponse.Header
		}
		// Stripe's error type and code are enumeration words: kept as
		// words, and only as such.
		detail := providers.Word(string(stripeErr.Type), 40)
		if stripeErr.Code != "" {
			detail += " (" + providers.Word(string(stripeErr.Code), 40) + ")"
		}
		failed := fmt.Errorf("%s: HTTP %d %s", prefix, stripeErr.HTTPStatusCode, detail)
		if msg := a.redact(stripeErr.Msg); msg != "" {
			// Stripe's message is free text (it can quote what was asked):
			// kept apart, its error a length and a digest.
			failed = fmt.Errorf("%s: HTTP %d %s: %w", prefix, stripeErr.HTTPStatusCode, detail, providers.Quote(msg))
		}
		return classify(stripeErr.HTTPStatusCode, header, failed)
	case errors.As(err, &status):
		return classify(status.status, status.header, fmt.Errorf("%s: %w", prefix, status))
	case errors.As(err, &bad):
		return providers.Transient(fmt.Errorf("%s: %w", prefix, bad))
	case errors.As(err, &urlErr):
		// url.Error names the URL, query included; only its cause is kept.
		cause := urlErr.Err
		if class, _ := providers.Classify(cause); class == providers.ClassPermanent {
			return fmt.Errorf("%s: %w", prefix, cause) // refused by ReadOnlyTransport
		}
		return providers.Transient(fmt.Errorf("%s: GET %s: %w", prefix, a.host, redacted{msg: a.redact(cause.Error()), err: cause}))
	}
	// What is left is the SDK failing to decode a body that passed
	// responseCheck; its message quotes the body.
	return providers.Transient(fmt.Errorf("%s: could not decode Stripe's search result", prefix))
}

// classify maps an HTTP status to a lookup error class.
func classify(status int, header http.Header, err error) error {
	switch {
	case status == http.StatusTooManyRequests:
		return providers.RateLimited(providers.RetryAfter(header.Get("Retry-After")), err)
	case status >= 500, status == http.StatusRequestTimeout, status == http.StatusConflict:
		return providers.Transient(err)
	case status >= 300:
		// 400 and 404 (a rejected query, a wrong api_base), 401 and 403
		// (bad or under-privileged key), redirects: trying again won't help.
		return providers.Permanent(err)
	}
	return providers.Transient(err)
}

var (
	emailRE     = regexp.MustCompile(`[^\s'"<>(),;:@]+@[^\s'"<>(),;:@]+`)
	stripeKeyRE = regexp.MustCompile(`\b(sk|rk|pk)_(test|live)_[A-Za-z0-9_-]*`)
	urlQueryRE  = regexp.MustCompile(`[a-z][a-z0-9+.-]*://[^\s'"]*\?[^\s'"]*`)
)

// redact makes a text from Stripe or the network fit for an error: no
// secret key (Stripe echoes a malformed Authorization header), no key of
// any kind, no email, no URL with a query, no control characters, and
// short.
func (a *Adapter) redact(s string) string {
	if a.key != "" {
		s = strings.ReplaceAll(s, a.key, "[secret]")
	}
	s = stripeKeyRE.ReplaceAllString(s, "[key]")
	s = emailRE.ReplaceAllString(s, "[email]")
	s = urlQueryRE.ReplaceAllString(s, "[url]")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return safetext.Truncate(strings.TrimSpace(s), 200)
}

// redacted is an error whose text was redacted, still unwrapping to the
// original for errors.Is and errors.As.
type redacted struct {
	msg string
	err error
}

func (e redacted) Error() string { return e.msg }
func (e redacted) Unwrap() error { return e.err }
