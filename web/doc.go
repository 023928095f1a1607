// Package web is the review page: the queue of open tickets in a browser,
// each ticket's evidence side by side with its ledger row, and the actions
// Slack's buttons and the CLI offer — acknowledge, resolve, reassign, note
// — on one ticket or many, and the silences. It is server-rendered
// (html/template, every asset embedded) and works with JavaScript off;
// there is no script at all.
//
// Everything it reads and writes goes through review: the queue through
// [review.Reader], every action through [review.Store] — one
// compare-and-set and one audit event each, whose outbox row tells the
// ticket's Slack thread — and who may act through [review.Deciders], the
// rule Slack's buttons use. The silences, which a reviewer adds and
// expires on the silences page, go through the hooks of [Config]
// (ActiveSilences, AddSilence, ExpireSilence), by the rules of `sweeper
// silences add`.
//
// Safe by construction: people are named by a trusted proxy and mapped to
// Slack user ids (nobody else sees anything); sessions live in signed,
// HttpOnly, SameSite=Lax cookies with an expiry; every change is a POST
// checked by [http.CrossOriginProtection] and a per-session token; every
// answer carries a strict Content-Security-Policy, X-Frame-Options DENY
// and nosniff; pages show recipients masked and no provider text; errors
// are pages.
package web
