package jobs

import (
	"log/slog"
	"testing"
)

// TestSweepDoneIsQuietWhenNothingWasScanned: an idle sweep logs "sweep
// done" at DEBUG; one that found, handed on or released anything at INFO.
func TestSweepDoneIsQuietWhenNothingWasScanned(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		desc string
		out  SweepOutput
		want slog.Level
	}{
		{desc: "nothing scanned", out: SweepOutput{}, want: slog.LevelDebug},
		{desc: "operations scanned, all already queued", out: SweepOutput{Scanned: 3, Duplicates: 3}, want: slog.LevelInfo},
		{desc: "operations handed on", out: SweepOutput{Scanned: 2, Enqueued: 2, Jobs: 1}, want: slog.LevelInfo},
		{desc: "only lost claims released", out: SweepOutput{Released: 1}, want: slog.LevelInfo},
	} {
		if got := sweepDoneLevel(tc.out); got != tc.want {
			t.Errorf("%s: level %s, want %s", tc.desc, got, tc.want)
		}
	}
}
