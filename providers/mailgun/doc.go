// Package mailgun looks emails sent through Mailgun up in the domain's
// events, through the official SDK (github.com/mailgun/mailgun-go/v4), by
// the op_key the workflow put in a user variable, and never sends one: its
// HTTP client refuses every request but GET ([providers.ReadOnlyTransport]),
// POST /v3/{domain}/messages included, and lets through only GETs of the
// domain's events.
//
// mailgun-go v4 reads Mailgun's events API (GET /v3/{domain}/events); it
// has no client for the Logs API (POST /v1/analytics/logs) that Mailgun
// now documents in its place, so the events API is what is searched.
// Mailgun keeps events from one day (free accounts) to 30 days, by plan:
// an operation older than that is not found, and goes to review.
//
// # What a workflow must do
//
// When it sends the email (POST /v3/{domain}/messages, or SMTP with an
// X-Mailgun-Variables header), the workflow sets the user variable named
// by variable (default "op_key") to the ledger's op_key:
//
//	v:op_key=order-1042-receipt
//
// which Mailgun's events show as "user-variables": {"op_key": "…"}, and
// stores as payload_hash the ledger payload hash (ledger.PayloadHash) of
// exactly
//
//	{"subject": "<the subject line as sent>"}
//
// — one key, the subject as the recipient sees it (a template's subject
// after rendering). A subject Mailgun shows otherwise gives another hash:
// payload_mismatch, a review ticket, never a resend.
//
// # What is searched
//
// One lookup asks, with basic auth (api, the key),
//
//	GET https://api.mailgun.net/v3/{domain}/events        (api.eu.mailgun.net for region "eu")
//	    ?begin=<Since>&end=<Until + 1s>&ascending=yes&limit=300
//	    &recipient=<the ledger's recipient>&event=accepted OR delivered OR failed OR rejected
//
// and follows each page's paging.next until a page is empty (Mailgun's
// documented end) or names itself again, for at most 20 pages; more is a
// permanent error, never a partial answer. A paging URL must be a page of
// the same domain's events on the same host, or the answer is malformed.
// The recipient is searched as the ledger holds it, surrounding white space
// removed; an operation without one cannot be searched (permanent). With
// api_base set, requests for the region's host go there instead.
//
// # Records
//
// Only an event whose user variable holds the op_key, exactly, as a
// string, is the operation's; an event without it is no match. The events
// of one message (accepted, then delivered) are one record: its Message-Id
// as the events show it (without the angle brackets the send's answer puts
// around it — a workflow that records the send's id should drop them),
// dated by its first event, with the event's recipient, the fields
// {"subject": …} and its hash, and an excerpt naming the events seen,
// never an address or the subject. Events of one message that disagree on
// its subject or recipient are a malformed answer.
//
// # Where a message stands
//
// A message's events are read with one table (stateOf in states.go, from
// the events Mailgun documents) onto the state the decision uses, kept in
// the record with the deciding event's name in Status and the events,
// severity and reason in the excerpt:
//
//	failed with severity permanent (suppress-bounce, bounce, …)   failed, whatever else was seen
//	rejected                                                      failed
//	delivered                                                     the effect
//	failed with severity temporary, not delivered                 in flight: Mailgun retries
//	accepted                                                      the effect
//
// Failed and rejected events are searched with the others so that a
// permanent failure overrides the message's accepted or delivered event.
// A failed event without a severity, or with one that is neither
// permanent nor temporary, is a malformed answer. A failed message
// carries no payload hash.
//
// # Errors
//
// 429 is rate-limited for its Retry-After (1s without one); 5xx, 408,
// network errors and timeouts are transient; 400, 401, 403, 404 (an unknown
// domain) and other statuses, and redirects, are permanent. A 200 body that
// is not one page of events — {}, null, no items array, no paging with a
// next URL, an event without a message-id or with a timestamp that is not
// a date, an event Mailgun does not name, more than 4 MiB, a key twice in
// an object or two keys that differ only in letter case, a field under
// another case ("Recipient"), data after the object — is a transient error,
// never zero events. mailgun-go never sees an error response and never
// retries; its error texts, which quote the request URL with the
// recipient, are not kept. Errors carry neither the key nor the recipient.
package mailgun
