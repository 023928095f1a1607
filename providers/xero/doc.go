// Package xero is the lookup adapter for invoices a workflow issues in
// Xero (kind "xero"): the workflow puts the ledger's op_key in the
// invoice's Reference, and the adapter reads
// GET /api.xro/2.0/Invoices?where=Reference=="<op_key>"&page=N with the
// Xero-tenant-id header, keeping only invoices whose Reference is the
// op_key exactly. It only sends GETs.
//
// Pages hold 100 invoices; a full page (or a pagination.pageCount beyond
// the page) means the next is read, at most 10. Answers are read strictly:
// an unknown top-level key, a key twice or in two letter cases, an
// invoice without an InvoiceID or Status, or a status Xero does not
// document is a malformed answer, never "none".
//
// Xero limits calls per organisation: 60 a minute, 5 at once, 5,000 a day.
// A 429 for the minute or concurrency limit is rate limited for its
// Retry-After; a 429 for the day (X-Rate-Limit-Problem: day, or
// X-DayLimit-Remaining: 0) is the provider's outage until Xero's
// Retry-After, up to a day (providers.OutUntil): its health takes it down
// for the cluster at once, and no probe asks before that time.
//
// Credentials: an OAuth2 access token from access_token_env, sent as a
// Bearer token. With refresh_token_env, client_id_env and
// client_secret_env, a token the API refuses (401) is renewed (POST to
// token_url with the refresh token grant, through a transport that reaches
// only that URL) and the GET sent again. Xero issues a new refresh token
// with each refresh and refuses a spent one: the newest is kept in the
// token store the adapter is given (providers.Env.Tokens), shared by the
// replicas and kept across restarts, so the variable gives the first one
// only. Without the refresh keys a 401 is permanent.
//
// The record namespace is "xero:" and tenant_id; at start the adapter
// checks with GET /connections that the token opens that organisation.
package xero
