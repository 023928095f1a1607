package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/sweeper/sweeper/settle"
)

// auditTimeout bounds one audit pass: an [settle.AuditPass] of requests
// and the writes after it. What is left is claimed and due again.
const auditTimeout = settle.AuditPass + time.Minute

// AuditArgs asks for one audit pass over the audited providers.
type AuditArgs struct {
	// NextFire, for a scheduled run, is the end of the schedule's period
	// it serves; zero for a run asked for by hand.
	NextFire time.Time `json:"next_fire,omitzero"`
}

// Kind implements river.JobArgs.
func (AuditArgs) Kind() string { return "audit" }

func (AuditArgs) forRun(nextFire time.Time) river.JobArgs { return AuditArgs{NextFire: nextFire} }

// AuditWorker runs the audit pass ([settle.Auditor.AuditAll]). River runs
// periodic jobs from the leader only; should two passes run at once, each
// operation is still audited once (its claim in sweeper.audits).
type AuditWorker struct {
	river.WorkerDefaults[AuditArgs]
	auditor *settle.Auditor
}

// NewAuditWorker returns the worker auditing with auditor.
func NewAuditWorker(auditor *settle.Auditor) *AuditWorker { return &AuditWorker{auditor: auditor} }

// Timeout bounds one pass.
func (w *AuditWorker) Timeout(*river.Job[AuditArgs]) time.Duration { return auditTimeout }

// Work implements river.Worker. A pass with no audited provider does
// nothing.
func (w *AuditWorker) Work(ctx context.Context, _ *river.Job[AuditArgs]) error {
	reports, err := w.auditor.AuditAll(ctx)
	if errors.Is(err, settle.ErrNoAudit) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return river.RecordOutput(ctx, reports)
}
