// Package proof decides what a lookup proves about an operation: the one
// rule, pure in [Decide] and with the ledger's checks in [Prove], by which
// an operation is promoted to done or goes to review with its [Reason];
// and the evidence snapshot ([Evidence]) a review ticket keeps of what
// sweeper saw.
package proof
