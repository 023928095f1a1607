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
// Retry-After; a 429 for the day (X-Rate-Limit-Problem: day) is the
// provider's outage, a transient error its health counts, until the day's
// calls are back.
//
// Credentials: an OAuth2 access token from access_token_env, sent as a
// Bearer token, read once when the adapter is built. The adapter does not
// refresh it (Xero's access tokens last 30 minutes; refreshing is not
// built): a 401 is a permanent error, and a new token needs a restart.
// Refreshing is left out because Xero issues a new refresh token with
// each refresh, which a read-only adapter holding its secrets in the
// environment could not keep.
//
// The record namespace is "xero:" and tenant_id; at start the adapter
// checks with GET /connections that the token opens that organisation.
package xero
