// Package stripe looks up Stripe payments and invoices with Stripe's Search
// and List APIs, through
// the official SDK (github.com/stripe/stripe-go), and never creates
// anything: its HTTP client refuses every request but GET
// ([providers.ReadOnlyTransport]), and the SDK's own retries are off
// (sweeper retries, within the lookup budget).
//
// # What a workflow must do
//
// When it creates a PaymentIntent (or a Charge), the workflow stores the
// ledger's op_key in the object's metadata under metadata_key (default
// "op_key"): metadata[op_key]=<op_key>. The adapter searches
//
//	GET /v1/payment_intents/search?query=metadata['op_key']:'<op_key>'
//	GET /v1/charges/search?query=metadata['op_key']:'<op_key>'
//
// for each type listed in objects (quotes and backslashes in the op_key are
// escaped with a backslash, as Stripe's search query language wants).
//
// Several operations are searched at once (max_batch, default and at most
// 10: Stripe's search query language takes up to 10 clauses in a query)
// with OR-joined clauses,
//
//	metadata['op_key']:'a' OR metadata['op_key']:'b' OR …
//
// every page of the result read (has_more, next_page), and each object
// goes to the operation whose op_key its metadata holds, exactly.
//
// The ledger's payload for a Stripe operation is exactly these normalized
// fields, and its payload_hash is the hash of exactly them (see
// ledger.PayloadHash), nothing more:
//
//	{"amount": 1299, "currency": "usd"}
//
// amount is the integer Stripe was given, in the currency's smallest unit
// (1299 for 12.99 USD, 500 for ¥500), the object's amount field — not
// amount_received or amount_captured; currency is the ISO code in lowercase,
// as Stripe returns it. Any other field in the workflow's hash (a
// description, a customer) makes every record disagree.
//
// The ledger's recipient, if set, must be what [providers.Record.Recipient]
// holds: the Stripe customer id (cus_…) when the object has a customer, else
// its receipt_email. An object with neither has no recipient, and only the
// payload is compared.
//
// # Records
//
// Each object found is one record: its id, created time, recipient,
// fields and payload hash as above, and a short excerpt for people
// ("payment_intent pi_3Nx… succeeded 1299 usd"), which never holds an email.
// A charge made by a PaymentIntent that was also found is the same payment
// and is not returned again, and an object listed twice (the index moved
// between pages) is one record; two different objects under one id are a
// malformed answer.
//
// Only an object whose metadata holds the op_key is returned. The metadata
// key is found as metadata_key exactly or, failing that, as the one key
// equal to it in another letter case (OP_KEY); several such keys are a
// malformed answer. Its value is compared exactly: Stripe's matching is
// looser than equality, and metadata {"OP_KEY": "order-10"} is not proof
// for the op_key ORDER-10. An object without the key is no match.
//
// Only an object whose status shows Stripe accepted the payment carries a
// payload hash: a PaymentIntent that succeeded, is processing or awaits
// capture, a Charge that succeeded or is pending. A declined, canceled or
// unfinished one is evidence of an attempt, not of the effect: it is
// returned with its fields but no hash, so the operation goes to review
// rather than to done.
//
// # Where a payment stands
//
// Each object's state in Stripe's state machine is read with one table
// (stateOf in states.go) onto the state the decision uses, kept in the
// record with what Stripe says in Status:
//
//	succeeded (a Charge: and captured)                  the effect
//	requires_capture, a Charge succeeded uncaptured     in flight, unless the ledger's action is
//	                                                    authorize, authorise, authorization or
//	                                                    authorisation (any case): then the effect
//	processing, a Charge pending, requires_action,
//	requires_confirmation, requires_payment_method
//	before any attempt (no last_payment_error)          in flight
//	requires_payment_method after a failed attempt,
//	canceled, a Charge failed                           failed
//	refunded (refunded, or amount_refunded above 0:
//	a partial refund too) or disputed                   reversed ("refunded 500 of 1299", "disputed")
//
// A PaymentIntent shows neither refunds nor disputes, so its search
// expands each one's latest charge (expand[]=data.latest_charge) and
// reads them there. A status not in the table is a malformed answer.
//
// The key's mode is read from its prefix (sk_live_ and rk_live_ are live,
// sk_test_ and rk_test_ test): an object whose livemode is the other mode
// is a misconfiguration, and the whole lookup a permanent error saying so
// — never proof. A key with neither prefix is not checked.
//
// # Invoices
//
// With "invoices" in objects, the workflow stores the op_key in the
// Invoice's metadata as above (Stripe allows 50 metadata keys, keys up to
// 40 and values up to 500 characters). An operation whose ledger recipient
// is a customer id (cus_…) is looked up in that customer's invoices,
//
//	GET /v1/invoices?customer=cus_…&created[gte]=<since>&created[lte]=<until>&limit=100
//
// every page followed (has_more, starting_after the last invoice, up to 10
// pages; a next_page in a list is a malformed answer), and the invoice
// whose metadata holds the op_key kept: the list reads Stripe's records,
// not its search index, so it does not lag. Any other operation's invoices
// are searched (GET /v1/invoices/search, with the same query and batching
// as above), and the search lags like the others. In a batch each
// customer's invoices are listed once, over the union of its operations'
// windows.
//
// The payload is {"amount": <total>, "currency": "<currency>"}: total is
// what the invoice bills, after discounts and tax, and does not change once
// the invoice is issued (amount_due does, with the customer's balance).
// The record's recipient is the invoice's customer (cus_…), else its
// customer_email: a workflow should write the customer id as the ledger's
// recipient, which also lets the exact list be used.
//
//	open, paid                                          the effect (issued; hash carried)
//	draft                                               in flight: may still be finalized or deleted
//	void                                                failed: the invoice was cancelled
//	uncollectible                                       reversed: issued, then written off; it
//	                                                    may still be paid or voided, so a
//	                                                    person decides
//
// Stripe's documentation leaves open what a written-off invoice means to
// the workflow that issued it; uncollectible is read the safe way, as a
// ticket, never done. livemode is checked as for payments.
//
// # Search lag
//
// Stripe's search index lags behind writes: the kind's default
// settle_window is ten minutes, during which sweeper asks again rather
// than take zero matches for an answer. It applies to a block as a whole,
// so an invoice list (which does not lag) waits the same window before its
// zero matches are "not found": slower, never wrong.
//
// # Errors
//
// 429 is rate-limited for the Retry-After header's seconds (1s without
// one); 5xx, 408, 409, network errors and timeouts are transient; 401, 403,
// 400, 404 and other 4xx are permanent. A 200 whose body is not a search
// result — `{}`, `null`, no data array, another object, data after the
// JSON, more than 4 MiB, a key twice in an object or two keys that differ
// only in letter case anywhere in it, a field the adapter reads under
// another case ("ID", "Amount") — is a transient error, never zero records.
// More than 10 pages of matches per op_key searched is a permanent error.
// Error texts carry neither the secret key nor an email nor a URL with its
// query.
//
// # Configuration
//
//	[providers.stripe]
//	kind = "stripe"
//	secret_key_env = "STRIPE_RESTRICTED_KEY"  # required: a read-only restricted key
//	metadata_key = "op_key"                   # default
//	objects = ["payment_intents"]             # and/or "charges", "invoices"
//	max_batch = 10                            # default and most
package stripe
