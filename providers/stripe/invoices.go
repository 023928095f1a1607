package stripe

import (
	"context"
	"fmt"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v82"

	"github.com/sweeper/sweeper/providers"
)

// isCustomerID reports whether a ledger recipient names a Stripe customer
// (cus_…) rather than an address: then that customer's invoices can be
// listed, which is exact, where the search lags.
func isCustomerID(recipient string) bool {
	rest, ok := strings.CutPrefix(recipient, "cus_")
	return ok && rest != "" && len(rest) <= 255 && !strings.ContainsFunc(rest, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	})
}

// listInvoices reads every page of GET /v1/invoices for customer, created
// within since and until (either zero: unbounded on that side), following
// has_more with starting_after up to [maxPages] pages. The list is read
// from Stripe's records, not its search index: an invoice is there as soon
// as it is created. Which of them are the operation's is decided on their
// metadata afterwards, as for a search.
func (a *Adapter) listInvoices(ctx context.Context, customer string, since, until time.Time) ([]found, error) {
	what := "list " + ObjectInvoices
	var all []found
	var after *string
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, providers.Permanent(fmt.Errorf("%s: %s: more than %d pages of the customer's invoices in the window", a.name, what, maxPages))
		}
		params := &stripego.InvoiceListParams{
			ListParams: stripego.ListParams{Context: ctx, Limit: stripego.Int64(pageSize), StartingAfter: after},
			Customer:   stripego.String(customer),
		}
		if !since.IsZero() || !until.IsZero() {
			params.CreatedRange = &stripego.RangeQueryParams{}
			if !since.IsZero() {
				params.CreatedRange.GreaterThanOrEqual = since.Unix()
			}
			if !until.IsZero() {
				params.CreatedRange.LesserThanOrEqual = until.Unix()
			}
		}
		var res stripego.InvoiceList
		if err := a.get("/v1/invoices", params, &res); err != nil {
			return nil, a.lookupError(ctx, what, err)
		}
		objs, err := a.invoicesFound(res.Data)
		if err != nil {
			return nil, a.lookupError(ctx, what, err)
		}
		all = append(all, objs...)
		if !res.HasMore {
			return all, nil
		}
		if len(objs) == 0 || (after != nil && objs[len(objs)-1].id == *after) {
			return nil, providers.Transient(fmt.Errorf("%s: %s: has_more without a new last invoice", a.name, what))
		}
		after = &objs[len(objs)-1].id
	}
}

// invoicesFound reads invoices, from a search or a list: the amount is the
// invoice's total (what it bills, after discounts and tax, before any
// customer balance is applied; amount_due can change after issue, total
// cannot), the recipient its customer or else its customer_email.
func (a *Adapter) invoicesFound(data []*stripego.Invoice) ([]found, error) {
	objs := make([]found, 0, len(data))
	for i, inv := range data {
		if inv == nil || inv.Object != "invoice" || strings.TrimSpace(inv.ID) == "" {
			return nil, &badResponse{reason: fmt.Sprintf("data[%d] is not an invoice with an id", i)}
		}
		f := found{
			object: inv.Object, id: inv.ID, created: inv.Created, amount: inv.Total,
			currency: string(inv.Currency), status: string(inv.Status), receiptEmail: inv.CustomerEmail,
			livemode: inv.Livemode,
		}
		var err error
		if f.opKey, f.hasOpKey, err = opKeyOf(inv.Metadata, a.metadataKey); err != nil {
			return nil, &badResponse{reason: fmt.Sprintf("data[%d]: %v", i, err)}
		}
		if inv.Customer != nil {
			f.customer = inv.Customer.ID
		}
		switch inv.Status {
		case stripego.InvoiceStatusOpen, stripego.InvoiceStatusPaid, stripego.InvoiceStatusUncollectible:
			f.accepted = true // issued: its amount is fixed
		}
		objs = append(objs, f)
	}
	return objs, nil
}

// customerWindow is one customer's invoices to list in a batch: from the
// earliest Since to the latest Until of its operations.
type customerWindow struct {
	customer     string
	since, until time.Time
}

// customerWindows groups operations by customer, in the order they come,
// so that a batch lists each customer's invoices once. A zero bound in any
// operation leaves that side unbounded.
func customerWindows(qs []providers.Query) []customerWindow {
	var out []customerWindow
	at := map[string]int{}
	for _, q := range qs {
		i, ok := at[q.Recipient]
		if !ok {
			at[q.Recipient] = len(out)
			out = append(out, customerWindow{customer: q.Recipient, since: q.Since, until: q.Until})
			continue
		}
		w := &out[i]
		if w.since.IsZero() || q.Since.IsZero() {
			w.since = time.Time{}
		} else if q.Since.Before(w.since) {
			w.since = q.Since
		}
		if w.until.IsZero() || q.Until.IsZero() {
			w.until = time.Time{}
		} else if q.Until.After(w.until) {
			w.until = q.Until
		}
	}
	return out
}
