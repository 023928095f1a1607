// Package review keeps the review tickets for what a lookup does not prove
// ([proof.Decide]): one per operation, with one owner, a deadline, an
// immutable evidence snapshot and an append-only audit trail.
package review
