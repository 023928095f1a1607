// Package hubspot looks CRM records up — contacts, deals or notes, one
// object type per block — by a custom property in which the workflow stores
// the ledger's op_key, and never creates, updates or deletes one: its HTTP
// client refuses every request but GET and the object type's search
// ([providers.ReadOnlyTransport]), HubSpot's create, batch, upsert, PATCH
// and DELETE endpoints included.
//
// # What a workflow must do
//
// When it creates the record, the workflow sets the property (default
// "op_key", a custom property of the object type) to the op_key, and
// stores as payload_hash the ledger payload hash (ledger.PayloadHash) of
// exactly the payload_properties as HubSpot returns them, as strings — by
// default {"email": "<the contact's email, lowercase>"} for a contact,
// {"dealname": …} for a deal, {"hs_note_body": …} for a note. A value
// HubSpot writes otherwise gives another hash: payload_mismatch, a review
// ticket, never a create.
//
// # What is read
//
// With unique_property (the property created with hasUniqueValue=true),
// one read, exact and current:
//
//	GET https://api.hubapi.com/crm/v3/objects/{object}/{op_key}?idProperty={property}&properties=…&archived=false
//	Authorization: Bearer <token>
//
// HubSpot's 404 with category OBJECT_NOT_FOUND is no record; another 404
// (an api_base that is not HubSpot) is a permanent error. The op_key is
// one escaped path segment ("." and ".." are refused).
//
// Otherwise the CRM search, the one POST the client sends:
//
//	POST https://api.hubapi.com/crm/v3/objects/{object}/search
//	{"filterGroups":[{"filters":[{"propertyName":"op_key","operator":"EQ","value":"<op_key>"}]}],
//	 "properties":[…],"limit":100,"after":"<cursor>"}
//
// paged by paging.next.after until there is none. HubSpot's search index
// is eventually consistent (seconds), so the kind's settle_window (5m)
// keeps an empty search from being final; sweeper, not the adapter, asks
// again. More than 10 pages for one op_key, or a total past the 10,000
// results HubSpot's search serves, is a permanent error. Requests go to
// api_base instead of api.hubapi.com when one is set (tests, proxies); the
// read-only check sees the api.hubapi.com request.
//
// # Records
//
// Only a record whose property holds the op_key exactly is the
// operation's: HubSpot's EQ is not documented to compare letter case, and
// a read answering for another value is malformed. Each is one record: its
// id (a decimal string), createdAt as its date, a contact's email as
// recipient, the payload_properties as its fields, and an excerpt of the
// object type, id and state, never a property's value. A live record is the
// effect and carries the payload hash (none when a payload property is
// missing: never agreement); an archived one is reversed (states.go).
//
// # Errors
//
// 429 is rate-limited for its Retry-After (1s without one); 5xx, 408,
// network errors and timeouts are transient; 401, 403, 400 and other 4xx
// and redirects are permanent. A 200 body that is not the answer — {},
// null, no total or results, a key twice or two keys differing only in
// letter case, a key HubSpot does not document on the page, its paging or
// a record, a record without a decimal id, createdAt or archived, a
// property that is not a string, a page longer than 100, a total the pages
// do not hold, a repeated cursor, more than 4 MiB, data after the object —
// is a transient error, never zero records. Errors carry neither the token
// nor the recipient: HubSpot's messages are reduced to their category.
package hubspot
