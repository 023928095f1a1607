// Package sendgrid looks emails sent through SendGrid up in the account's
// Email Logs, through the official client (github.com/sendgrid/sendgrid-go
// and its rest package), by the op_key the workflow put in custom_args,
// and never sends one: its HTTP client refuses every request but GET
// ([providers.ReadOnlyTransport]) and the one POST it declares, Email Logs'
// search on the region's SendGrid host — POST /v3/mail/send is refused
// before it leaves the process.
//
// # Which SendGrid plan
//
// Email Logs (POST /v3/logs, GET /v3/logs/{sg_message_id}) is what is
// searched: SendGrid documents it for every email customer, with 30 days
// of history, no add-on. The older Email Activity API (GET /v3/messages)
// needs the paid "additional email activity history" add-on, and its
// answers do not carry custom_args, so it is not used. The API key must be
// the sending account's (a parent account's key does not see a subuser's
// messages) and may read email logs; a key that may only send gets 401 or
// 403, a permanent error that says so.
//
// An account without Email Logs cannot be searched at all. SendGrid does
// not document its answer then; a 404 to the search endpoint itself — not
// to a message's details — is taken to be it, and the lookup answers
// [providers.ErrUnsupported] with the reason (the operation goes to review
// as lookup_unsupported), never zero records.
//
// # What a workflow must do
//
// When it sends the email (POST /v3/mail/send), the workflow puts the
// ledger's op_key in custom_args under custom_arg (default "op_key"), in
// the request or in the personalization of the one recipient:
//
//	"custom_args": {"op_key": "order-1042-receipt"}
//
// and stores as payload_hash the ledger payload hash (ledger.PayloadHash) of
// exactly
//
//	{"subject": "<the subject line as sent>"}
//
// — one key, the subject as the recipient sees it (a dynamic template's
// subject after rendering). A subject SendGrid shows otherwise gives
// another hash: payload_mismatch, a review ticket, never a resend. One
// operation is one recipient: SendGrid gives each recipient of a send its
// own sg_message_id, and the record's id is that one (the X-Message-Id the
// send answered is its prefix).
//
// # What is searched
//
// One lookup asks, with the key as a bearer token,
//
//	POST https://api.sendgrid.com/v3/logs                 (api.eu.sendgrid.com for region "eu")
//	{"query": "to_email = \"<recipient>\" AND sg_message_id_created_at >= TIMESTAMP \"<Since>\"
//	           AND sg_message_id_created_at <= TIMESTAMP \"<Until + 1s>\"", "limit": 1000}
//
// — SendGrid takes the query in a POST body so that addresses stay out of
// URLs — then reads the details of each message listed
// (GET /v3/logs/{sg_message_id}), which hold its custom_args. Email Logs
// does not page: an answer of 1000 messages may be cut short, and more
// than 20 messages to the recipient in the window are more than are read
// one by one; both are permanent errors, never a partial answer. The
// recipient is searched as the ledger holds it, surrounding white space
// removed (SendGrid's queries are case-sensitive: the ledger must hold the
// address as it was sent); one holding a quote, a backslash or a control
// character cannot be put in a query, and an operation without one cannot
// be searched (both permanent). With api_base set, requests for the
// region's host go there instead.
//
// # Records
//
// Only a message whose custom_args hold custom_arg, exactly, with the
// op_key as its value, exactly, is the operation's; one without it is no
// match. Each is one record: its sg_message_id (exact), dated by
// sg_message_id_created_at, its to_email, the fields {"subject": …} and
// an excerpt of its status, never an address or the subject. Its status
// is read with one table (messageStates in states.go) onto the state the
// decision uses, and kept in the record: processed and delivered are the
// effect; deferred is in flight (SendGrid retries); not_delivered,
// dropped, bounce (or bounced) and blocked are a failed attempt, evidence
// but never proof, without the payload hash; any other status is a
// malformed answer. A message listed twice is one record when both copies agree,
// else a malformed answer.
//
// # Errors
//
// 429 is rate-limited for Retry-After, else until X-RateLimit-Reset, else
// 1s; 5xx, 408, a 404 to a listed message's details, network errors and
// timeouts are transient; 400, 401, 403, other statuses and redirects are
// permanent; 404 to the search is ErrUnsupported. A 200 body that is not
// the answer — {}, null, no messages array, a message without an
// sg_message_id or an sg_message_id_created_at with its offset, details of another
// message, custom_args that are not strings, more than 4 MiB, a key twice
// in an object or two keys that differ only in letter case, a field under
// another case ("TO_EMAIL"), data after the value — is a transient error,
// never zero messages. Errors carry neither the key nor the recipient:
// SendGrid's error messages, which can quote the query, are not kept.
package sendgrid
