// Package httplookup is the adapter of kind "http", the generic lookup
// protocol: any service that answers one GET with the records it holds for
// an operation can be a provider, an n8n webhook workflow included. The
// package is not named http, its kind: that name would shadow net/http in
// every file that uses both.
//
//	GET {url}?op_key=…&recipient=…&action=…&since=…&until=…   (RFC 3339 times)
//	Authorization: Bearer <token from token_env>                (when token_env is set)
//	→ 200 {"matches":[{"id":"…","created_at":"…","recipient":"…","payload_hash":"…",
//	                   "op_key":"…","state":"effect","status":"delivered"}]}
//
// {"matches":[]} means "searched, found none". Keys are exact and each
// appears once per object: a body with a key twice, two keys that differ
// only in letter case, a field under another case ("ID", "Payload_Hash"),
// invalid UTF-8 or data after the object is malformed. Any other status, a
// malformed body or a missing matches field is a failed lookup, never "none":
// 429 waits for Retry-After, 5xx and network errors are retried, 401, 403
// and other 4xx are permanent.
//
// The answer is whole or it is refused. The protocol has no pages, and the
// top level holds matches and nothing else: a key beside it — a page's
// has_more, next, next_cursor, cursor, next_page, next_page_token, total or
// count, whatever its value, or any key the protocol does not name — is a
// malformed answer (transient, never records), as is a Link header with a
// next, prev, first or last relation. An endpoint that relays a paged
// search reads every page before it answers. A record's own keys beyond
// the protocol's are ignored: they cannot say the answer goes on.
//
// A record's optional keys:
//
//   - state: where it stands at the provider — "effect" (the default, also
//     for null: the record is the effect), "in_flight" (still being made:
//     a scheduled message) or "failed" (the provider says the attempt
//     failed). Any other value is a malformed answer. Only an effect
//     proves the operation done.
//   - status: the provider's own word for it, for people; cut to 200
//     bytes.
//   - op_key: the key the provider holds the record under. From an
//     endpoint that searches by op_key, a record carrying another op_key
//     (compared exactly: another letter case is another key) is a
//     malformed answer; null or absent is not compared.
//
// # Batch form
//
// An endpoint that searches by op_key may answer for several operations in
// one request; its block says so with max_batch (2 to 50; default 1, the
// single form above). The batch form is still a GET:
//
//	GET {url}?since=…&until=…&op_key=a&op_key=b&op_key=c
//	→ 200 {"results":[{"op_key":"a","matches":[…]},
//	                  {"op_key":"b","matches":[]},
//	                  {"op_key":"c","error":"upstream timeout"}]}
//
// since and until span the windows of every operation asked; recipient and
// action are not sent. Each op_key asked has exactly one entry, holding
// either its matches (as in the single form; [] is "found none") or an
// error the endpoint had for that operation alone, which fails only that
// operation's lookup (it is retried). Entries are a list rather than an
// object keyed by op_key, because op_keys that differ only in letter case
// are distinct operations. The top level holds results only, and an entry
// op_key, matches and error only, under the single form's rule: a page's
// key or any other at the top fails every operation of the request, and
// in an entry fails that operation's lookup. A response that is not this
// shape, or holds an
// entry for an op_key not asked, fails every operation of the request; an
// op_key missing, listed twice, or with both or neither of matches and
// error fails that operation's lookup; a record listed under two op_keys
// proves neither. A batch whose URL would pass 6 KiB ([MaxURL]) is sent as
// several requests. An endpoint with max_batch above 1 is asked for a
// single operation in the batch form too.
//
// # Matching
//
// By op_key (search_by = "op_key", the default): every record the endpoint
// returns is the operation's by its key. An endpoint that finds records by
// recipient, payload and time says search_by = "resemblance", and sweeper
// holds its records to the operation's own window.
//
// # Configuration
//
//	[providers.orders]
//	kind = "http"
//	url = "https://lookup.internal.example/orders"  # required
//	token_env = "ORDERS_LOOKUP_TOKEN"              # optional: a bearer token
//	search_by = "op_key"                           # or "resemblance"
//	max_batch = 20                                 # optional: the batch form
package httplookup
