package main

import (
	"strings"
	"testing"
)

// TestTicketsReassignRefusesStrangers runs `sweeper tickets reassign` as a
// process: an e-mail, markup or a Slack user id nobody configured is
// refused with the owner's problem (exit 2) and the ticket keeps its
// owner; with Slack on only a Slack user id the configuration names
// (here a reviewer) takes it.
func TestTicketsReassignRefusesStrangers(t *testing.T) {
	t.Parallel()
	b := setupResolve(t, "nf-stranger")
	id := b.id("nf-stranger")
	slackOn := writeConfig(t, daemonConfig+"\n[slack]\nchannel = \"C0REVIEW01\"\nreviewers = [\"U0LEAD0001\"]\n")
	for _, tc := range []struct {
		desc, to, why string
		slack         bool
	}{
		{desc: "an e-mail", to: "ben@example.com", why: "owner: must be a Slack user id"},
		{desc: "markup", to: "<svg/onload=alert(4)>", why: "owner: must be a Slack user id"},
		{desc: "an e-mail, Slack on", to: "ben@example.com", why: "owner: must be a Slack user id", slack: true},
		{desc: "a stranger's Slack id, Slack on", to: "U0STRANGER", why: "owner: U0STRANGER is no one sweeper knows", slack: true},
	} {
		args := []string{"tickets", "reassign", id, "--to", tc.to, "--by", "alice"}
		cfg := b.cfgFile
		if tc.slack {
			cfg = slackOn
		}
		r := b.processWith(t, cfg, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tc.why) {
			t.Errorf("%s: code %d, stderr %q; want %d and %q", tc.desc, r.code, r.stderr, exitUsage, tc.why)
		}
	}
	if tk := b.show(t, "nf-stranger"); tk.Owner != "U0DEFAULT1" || len(tk.Events) != 1 {
		t.Fatalf("ticket after the refusals = owner %s, %d events; want U0DEFAULT1 and the opening alone", tk.Owner, len(tk.Events))
	}
	if r := b.processWith(t, slackOn, "tickets", "reassign", id, "--to", "U0LEAD0001", "--by", "alice"); r.code != exitOK {
		t.Errorf("reassign to a reviewer: code %d\n%s", r.code, r.stderr)
	}
	if tk := b.show(t, "nf-stranger"); tk.Owner != "U0LEAD0001" {
		t.Errorf("owner = %s, want U0LEAD0001", tk.Owner)
	}
}
