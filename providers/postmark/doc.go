// Package postmark looks emails sent through Postmark up with the Messages
// API's outbound message search, by the op_key the workflow put in the
// message's Metadata, and never sends one: its HTTP client refuses every
// request but GET ([providers.ReadOnlyTransport]), Postmark's send
// endpoints (POST /email, /email/batch, …) included.
//
// # What a workflow must do
//
// When it sends the email (POST /email, /email/withTemplate, a batch, or
// SMTP with an X-PM-Metadata-op_key header), the workflow puts the
// ledger's op_key in the message's Metadata under metadata_key (default
// "op_key"):
//
//	"Metadata": {"op_key": "order-1042-receipt"}
//
// and stores as payload_hash the ledger payload hash (ledger.PayloadHash) of
// exactly
//
//	{"subject": "<the subject line as sent>"}
//
// — one key, the subject as the recipient sees it (a template's subject
// after rendering). A subject Postmark shows otherwise gives another hash:
// payload_mismatch, a review ticket, never a resend.
//
// # What is searched
//
// One lookup asks
//
//	GET {api_base}/messages/outbound?count=500&offset=0
//	    &recipient=<the ledger's recipient>&metadata_op_key=<op_key>
//	    &fromdate=<Since − 1 day>&todate=<Until + 1 day>[&messagestream=…]
//	X-Postmark-Server-Token: <token>
//	Accept: application/json
//
// and pages by offset while TotalCount says there is more. Postmark serves
// at most 10,000 messages of one search (count ≤ 500, offset + count ≤
// 10,000): a search that matches more is a permanent error, never a
// partial answer. Postmark reads fromdate and todate in Eastern Time
// without an offset; they are written in Eastern Standard Time and a day
// wider than the query on each side, so that neither daylight saving time
// nor a reading in another zone narrows the search. The recipient is
// searched as the ledger holds it, surrounding white space removed; an
// operation without one is searched by its key alone.
//
// # Records
//
// Postmark's metadata filter is not documented to be exact, so each
// message's Metadata is compared again: only a message whose Metadata holds
// metadata_key, exactly, with the op_key as its value, exactly, is the
// operation's; a message without it is no match. Each is one record: its
// MessageID (exact, as Postmark writes it, which is also what the send
// answered), ReceivedAt as its date, the ledger's recipient as Postmark
// lists it among the message's Recipients (else the first of them), the
// fields {"subject": …} and an excerpt of its status and stream, never an
// address or the subject. Its Status is read with one table
// (messageStates in states.go) onto the state the decision uses, and kept
// in the record: Sent, Processed and Queued are the effect and carry the
// payload hash; Bounced, Failed and Blocked are a failed attempt, evidence
// but never proof, and carry none; any other Status is a malformed answer. A message listed twice (a page boundary that
// moved) is one record when both copies agree, else a malformed answer.
//
// # Errors
//
// 429 is rate-limited for its Retry-After (1s without one); 5xx, 408,
// network errors and timeouts are transient; 401 (a bad token, Postmark's
// ErrorCode 10), 422 (a rejected search), other 4xx and redirects are
// permanent. A 200 body that is not one search result — {}, null, no
// TotalCount or no Messages array, a message without a MessageID or a
// ReceivedAt with its offset, a page longer than asked or shorter than
// TotalCount says, more than 4 MiB, a key twice in an object or two keys
// that differ only in letter case, a field under another case ("SUBJECT"),
// data after the object — is a transient error, never zero messages.
// Errors carry neither the token nor the recipient: Postmark's messages
// are reduced to its ErrorCode and URLs are stripped.
package postmark
