// Package twilio looks SMS and other Twilio messages up by recipient and
// time, through the official SDK (github.com/twilio/twilio-go), and never
// sends one.
//
// # What is searched
//
// One lookup lists the account's Messages
//
//	GET {api_base}/2010-04-01/Accounts/{AccountSid}/Messages.json
//	    ?To=<the ledger's recipient>&From=<from, when set>
//	    &DateSent>=<midnight UTC starting Since's day>
//	    &DateSent<=<midnight UTC ending Until's day>&PageSize=1000
//
// and follows next_page_uri for at most 20 pages; more is an error, never a
// partial answer. Twilio's DateSent bounds are coarse (documented by the
// day), so the adapter then keeps, precisely, the messages whose
// date_created — when Twilio accepted the request — lies in [Since, Until].
// A message Twilio accepted but has not sent yet (queued, scheduled) has no
// date_sent and may not be listed: "not found" is never proof (I3).
//
// The To filter is the recipient's number in E.164, as Twilio stores it
// and matches it: the ledger's "+1 (555) 010-0002" is searched as
// +15550100002, and a channel address keeps its prefix
// (whatsapp:+15550100002). A recipient that is not a phone number with its
// country code — none, an email address, a national number without "+" —
// cannot be searched: that is a permanent error saying why, never "not
// found". Records carry the recipient as Twilio gives it. twilio-go deletes
// any "." followed by digits from query strings, so a from holding one is
// refused by the configuration.
//
// # What a workflow must hash
//
// Each message is a record with the normalized fields
//
//	{"body": "<the message text>"}
//
// so the workflow must store as payload_hash the ledger payload hash of
// exactly {"body": "<the text it sent>"} — one key, the text as given to
// Twilio's Body parameter. Twilio may alter a body it sends (smart
// encoding of Unicode, link shortening, a Messaging Service's opt-out
// footer), and then the hashes differ: that is payload_mismatch, a review
// ticket, never a resend. A message without a body (media only) has no
// payload hash and never agrees.
//
// # Where a message stands
//
// Each message's status is read with one table (messageStates, from the
// status values Twilio documents for the Message resource) onto the state
// the decision uses, kept in the record with Twilio's own word in Status
// (and error_code in the excerpt):
//
//	queued, accepted, sending, sent, delivered, read,
//	partially_delivered                           the effect
//	scheduled                                     in flight (may still be cancelled)
//	failed, undelivered, canceled                 failed: the attempt, not the effect
//	receiving, received, or direction inbound     no candidate: left out
//
// Only a message whose direction is outbound-api, outbound-call or
// outbound-reply is an attempt to reach the recipient; an inbound message
// (the recipient writing back) is left out. A status or a direction that
// is not in the table is a malformed answer (transient), never proof. A
// failed message carries no payload hash.
//
// # Which records are returned
//
// Every outbound message to the recipient in the window is a candidate. When some
// candidates' body hash equals the query's payload hash, only those are
// returned (one → done, several → multiple_matches); otherwise all
// candidates are returned (none → not_found, others → payload_mismatch),
// so the decision, not the adapter, judges them. More than 20 records to
// return is a permanent error ("too many candidates"): a person looks.
//
// # Errors
//
// 429 is rate-limited for its Retry-After (seconds or an HTTP date; 1s when
// absent); 5xx, 408, network errors and timeouts are transient; 400, 401,
// 403, 404 and other statuses are permanent. A 200 body that is not one
// JSON object with a "messages" array — {}, null, HTML, a truncated body,
// data after the object, more than 4 MiB, a key twice in an object or two
// keys differing only in letter case, a field under another case ("Body",
// "SID") — is a transient error, never zero messages. A message listed
// twice is one record when both copies agree, else a transient error. Errors name neither the auth token, the Account SID, nor
// the recipient: URLs are stripped from them, Twilio's error messages are
// reduced to their code, and a message that still names one is withheld.
//
// # How the SDK is held
//
// Every request goes through [providers.ReadOnlyTransport] first, so no
// POST can leave, then through this package's transport, which binds the
// request to the lookup's context (twilio-go takes none), sends it to
// api_base instead of https://api.twilio.com (twilio-go has no base URL
// option; TWILIO_EDGE and TWILIO_REGION are ignored), adds the basic
// auth, reads and checks the body, and turns any status but 200 into a
// classified error — so twilio-go never sees an error response and never
// retries one.
//
// # Configuration
//
//	[providers.twilio]
//	kind = "twilio"
//	account_sid_env = "TWILIO_ACCOUNT_SID"  # required
//	auth_token_env = "TWILIO_AUTH_TOKEN"    # required
//	from = "+15017122661"                   # optional: one sender only
package twilio
