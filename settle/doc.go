// Package settle holds the steps that settle uncertain operations, which
// the River workers and the once-runners both run: the stale scan, the
// lookup — its budget ([Budget.Next]: ask again, or give up) — and its
// decision (the Settler), and the escalation of tickets past their
// deadline. It knows nothing of River or of configuration.
package settle
