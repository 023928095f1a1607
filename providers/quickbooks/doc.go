// Package quickbooks is the lookup adapter of QuickBooks Online invoices
// (kind "quickbooks"): whether the invoice a workflow issues exists.
//
// # How an operation is found
//
// The workflow sets the invoice's DocNumber to the ledger's op_key. The
// adapter asks the company's query endpoint,
// GET /v3/company/{realmId}/query?query=SELECT * FROM Invoice WHERE
// DocNumber = '<op_key>' STARTPOSITION n MAXRESULTS 1000&minorversion=75,
// following pages while a page is full, and keeps only invoices whose
// DocNumber is exactly the op_key (the filter is no proof).
//
// A DocNumber holds at most 21 characters: a longer op_key, or one holding
// a backslash or a control character (which the query language cannot
// quote safely; a quote is escaped as \'), is a permanent error naming why
// — a ticket, never a guess. Whether a query may filter on a custom field
// is not documented clearly by Intuit; the adapter does not rely on it.
//
// # States
//
// A live invoice is the effect. A voided invoice keeps its Id with TotalAmt
// and Balance zeroed and "Voided" in PrivateNote: a failed attempt, never
// proof. A deleted invoice is not returned: not found.
//
// # Requests and credentials
//
// Only GETs leave, through the read-only transport. The OAuth 2.0 access
// token comes from access_token_env. With refresh_token_env, client_id_env
// and client_secret_env, a token the API refuses (401) is refreshed once
// (POST to token_url with the refresh token grant, through a transport that
// reaches only that URL) and the GET sent again; Intuit rotates refresh
// tokens, and the newest is kept in the token store the adapter is given
// (providers.Env.Tokens), shared by the replicas and kept across restarts,
// so the variable gives the first one only. Without them, 401 is permanent. QuickBooks limits a realm to 500 requests a minute and
// 10 a second per app: 429 is rate limited, for Retry-After's delay or a
// minute.
//
// The records' namespace is "quickbooks:" and realm_id, checked once with
// GET /v3/company/{realmId}/companyinfo/{realmId}.
package quickbooks
