// Package gcal looks meetings booked in Google Calendar up, in one
// calendar's events, by the op_key the workflow put on the event, and never
// books one: its API client refuses every request but GET
// ([providers.ReadOnlyTransport]), events.insert and every other write
// included. Its kind is google_calendar.
//
// # What a workflow must do
//
// When it creates the event (events.insert), the workflow puts the
// ledger's op_key in the event's private extended properties under
// property_key (default "op_key"):
//
//	"extendedProperties": {"private": {"op_key": "booking-1042"}}
//
// With event_id_from_op_key = true it also sets the event's id to
// [EventID](op_key): the lowercase base32hex (0-9, a-v, no padding) of the
// op_key's SHA-256, 52 characters — in n8n, a Crypto node (SHA256, hex)
// then base32hex of the digest's bytes. Google refuses a second event with
// that id, so a retried insert cannot book twice, and sweeper reads the
// event by id as well as searching.
//
// As payload_hash the workflow stores the ledger payload hash of exactly
//
//	{"summary": "<the event's title as sent>", "start": "<start.dateTime, or start.date for an all-day event>"}
//
// with start as Google returns it (RFC 3339 with the offset sent). Other
// text gives another hash: payload_mismatch, a review ticket. The summary
// is free text: sweeper keeps only that hash, never the text (I7).
//
// # What is asked
//
// With event_id_from_op_key, first
//
//	GET {api_base}/calendar/v3/calendars/{calendar_id}/events/{EventID(op_key)}
//
// (404 or 410: no such event; found, it is the operation's even without
// the property, but one naming another op_key is a malformed answer), then
// always
//
//	GET {api_base}/calendar/v3/calendars/{calendar_id}/events
//	    ?privateExtendedProperty=<property_key>=<op_key>&showDeleted=true&maxResults=250
//
// following nextPageToken until it is absent, at most 20 pages (an answer
// still saying "more" past them is malformed, as is a repeated or empty
// token, or a page with both nextPageToken and nextSyncToken). A page may
// hold fewer events than asked, or none, while nextPageToken says more
// exist. timeMin and timeMax are not sent: they bound when the meeting
// takes place, not when it was booked. An event the filter returns without
// the op_key in its private properties is dropped (the filter is no
// proof), except a cancelled event listed without properties (Google
// guarantees only a deleted event's id), kept as reversed.
//
// # States
//
// confirmed and tentative are the effect (the meeting is on the calendar);
// cancelled is reversed (deleted or cancelled since): see eventStates.
//
// # Credentials
//
// A service account's JSON key, from the variable credentials_env names or
// the file NAME_FILE names. The adapter signs a JWT with it and exchanges
// it for an access token at token_url (the OAuth 2.0 JWT bearer grant,
// scope calendar.readonly): that POST creates nothing at Google and goes
// through a transport of its own that lets only it through. The token is
// kept until a minute before it expires; a 401 from the API drops it and
// fetches one more, once; a second 401 is permanent (the account cannot
// read the calendar). A token endpoint refusing the key (400, 401, 403:
// invalid_grant, a disabled account) is permanent — a misconfiguration.
// The calendar must be shared with the service account's client_email.
//
// # Errors
//
// 429, and 403 with the reason userRateLimitExceeded, rateLimitExceeded or
// quotaExceeded (Google Calendar's usage limits), are rate limited, for
// Retry-After's delay or a minute; any other 403, and 404 for the calendar,
// are permanent (the calendar is not shared with the account, or the id is
// wrong); 5xx is transient. Errors name Google's reason, never its message.
//
// # Namespace
//
// The calendar: GET /calendar/v3/calendars/{calendar_id} at start, so a
// key that cannot read it leaves the provider not ready, and "primary"
// becomes the account's real calendar id.
package gcal
