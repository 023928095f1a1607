package silence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/sweeper/sweeper/proof"
	"github.com/sweeper/sweeper/review"
)

// A silence never holds everything without an explicit force. Whether it
// would is asked of its matchers label by label, against the values the
// label takes: the values sweeper knows (the configured providers and
// workflows and owners, every reason, the labels of the open tickets) and,
// for the labels whose values are not a known list — workflow (any text),
// owner (a Slack user id) and escalation_level (a number) — values made up
// in the label's shape ([madeUpValues]). Provider and reason are known
// lists: a provider sweeper is not configured for only ever reaches a
// ticket as an open ticket's label, which counts as known. The empty value
// is no ticket's (it is an incident's missing label, which
// [Store.Check] rules on).

// ErrHoldsEverything: the silence asked for would hold every
// ticket — each label it names matched on every value it takes, or every
// open ticket and every value known matched; refused unless forced. Errors
// that match it match [ErrInvalid] too, and say how many open
// tickets and providers it would hold.
var ErrHoldsEverything = errors.New("the silence would hold every ticket")

// labelReach is how a silence's matchers on one label fare against the
// values the label takes.
type labelReach struct {
	// Name is the label; Matchers, the silence's matchers on it.
	Name     string
	Matchers []Matcher
	// KnownMissed counts the values sweeper knows the matchers miss.
	KnownMissed int
	// MadeUpMissed counts the made-up values they miss; a label of a
	// known list has none.
	MadeUpMissed int
	// MadeUp is how many made-up values were tried.
	MadeUp int
}

// holdsEverything decides whether a silence with labels' reach, matching
// openMatched of openAll open tickets, would hold every ticket: every
// label it names is matched on every value known, and either on every
// value made up as well (any ticket to come), or every open ticket, at
// least one, is matched (everything there is). It says why when so.
func holdsEverything(labels []labelReach, openMatched, openAll int64) (bool, string) {
	if len(labels) == 0 {
		return false, ""
	}
	anyValue := true
	for _, l := range labels {
		if l.KnownMissed > 0 {
			return false, ""
		}
		anyValue = anyValue && l.MadeUpMissed == 0
	}
	if !anyValue && (openAll == 0 || openMatched < openAll) {
		return false, ""
	}
	var why []string
	for _, l := range labels {
		parts := make([]string, len(l.Matchers))
		for i, m := range l.Matchers {
			parts[i] = m.String()
		}
		verb := "matches"
		if len(parts) > 1 {
			verb = "match"
		}
		what := "every " + l.Name + " known"
		if l.MadeUp > 0 && l.MadeUpMissed == 0 {
			what = "any " + l.Name
		} else if l.MadeUp == 0 {
			what = "every " + l.Name
		}
		why = append(why, fmt.Sprintf("%s %s %s", strings.Join(parts, " "), verb, what))
	}
	return true, strings.Join(why, "; ")
}

// reach measures matchers against the values of each label they name
// ([labelReach]), known and made up, in the database: the matching is
// PostgreSQL's ([Store.Unmatched]).
func (s *Store) reach(ctx context.Context, matchers []Matcher, known Known, labels []review.Labels) ([]labelReach, error) {
	values := knownValues(known, labels)
	var out []labelReach
	for _, name := range MatcherNames {
		var on []Matcher
		for _, m := range matchers {
			if m.Name == name {
				on = append(on, m)
			}
		}
		if len(on) == 0 {
			continue
		}
		l := labelReach{Name: name, Matchers: on}
		var err error
		if l.KnownMissed, err = s.Unmatched(ctx, on, name, values[name]); err != nil {
			return nil, err
		}
		madeUp := madeUpValues(name)
		l.MadeUp = len(madeUp)
		if l.MadeUpMissed, err = s.Unmatched(ctx, on, name, madeUp); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// knownValues are the values sweeper knows of each label: the
// configuration's, every reason, and the open tickets'; never "".
func knownValues(known Known, labels []review.Labels) map[string][]string {
	v := map[string][]string{
		"provider": slices.Clone(known.Providers),
		"workflow": slices.Clone(known.Workflows),
		"owner":    slices.Clone(known.Owners),
	}
	for _, r := range proof.Reasons {
		v["reason"] = append(v["reason"], string(r))
	}
	for _, l := range labels {
		v["provider"] = append(v["provider"], l.Provider)
		v["workflow"] = append(v["workflow"], l.Workflow)
		v["reason"] = append(v["reason"], l.Reason)
		v["owner"] = append(v["owner"], l.Owner)
		v["escalation_level"] = append(v["escalation_level"], l.EscalationLevel)
	}
	for k, list := range v {
		slices.Sort(list)
		v[k] = slices.DeleteFunc(slices.Compact(list), func(s string) bool { return s == "" })
	}
	return v
}

// providerCount is how many providers sweeper knows: configured, or an
// open ticket's.
func providerCount(known Known, labels []review.Labels) int {
	return len(knownValues(known, labels)["provider"])
}

// madeUpValues are values of label name made up in its shape, the same on
// every call: for workflow, the shapes workflows are given (billing,
// n8n: Send invoice, team/flow-v2) and random text of every length up to
// 1 KiB over several alphabets — lower and upper case, digits,
// punctuation, spaces, accented, Cyrillic, CJK, emoji; for owner, Slack
// user ids (U or W, then 2 to 14 capitals and digits); for
// escalation_level, 0 to 31. Provider and reason have none: their values
// are known.
func madeUpValues(name string) []string {
	rng := rand.New(rand.NewPCG(0x5117, uint64(len(name))))
	pick := func(alphabet []rune, n int) string {
		b := make([]rune, n)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	switch name {
	case "workflow":
		out := []string{"billing", "invoices", "signup", "login", "n8n: Send invoice", "Make scenario 4412", "team/flow-v2",
			"billing.refunds", "OrderPaid", "order_paid", "x", "X", "0", "-", "_", " ", "🙂", "中文", "Zahlungseingang prüfen"}
		alphabets := [][]rune{
			[]rune("abcdefghijklmnopqrstuvwxyz"),
			[]rune("ABCDEFGHIJKLMNOPQRSTUVWXYZ"),
			[]rune("0123456789"),
			[]rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./: "),
			[]rune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t"),
			[]rune("éèüößçñåøæ ÉÜ"),
			[]rune("абвгдежзийклмнопрстуфхцчшщыэюя"),
			[]rune("中文日本語한국어"),
			[]rune("🙂🚀✅❌💸"),
		}
		for _, a := range alphabets {
			for _, n := range []int{1, 2, 3, 5, 8, 13, 21, 40, 64, 100, 255, 1024} {
				out = append(out, pick(a, n))
			}
		}
		return out
	case "owner":
		caps := []rune("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
		out := []string{"U0123ABCD", "W0123ABCD", "U024BE7LH", "UXXXXXXXX", "U00"}
		for i := range 60 {
			out = append(out, string("UW"[i%2])+pick(caps, 2+i%13))
		}
		return out
	case "escalation_level":
		out := make([]string, 32)
		for i := range out {
			out[i] = fmt.Sprint(i)
		}
		return out
	}
	return nil
}

// Unmatched counts the values of label name that matchers miss: those
// that a matcher of matchers on name does not match. A silence without a
// matcher on name misses none.
func (s *Store) Unmatched(ctx context.Context, matchers []Matcher, name string, values []string) (int, error) {
	var on []Matcher
	for _, m := range matchers {
		if m.Name == name {
			on = append(on, m)
		}
	}
	if len(on) == 0 || len(values) == 0 {
		return 0, nil
	}
	b, err := json.Marshal(on)
	if err != nil {
		return 0, err
	}
	var n int
	err = s.db.QueryRow(ctx, `SELECT count(*) FROM unnest($2::text[]) AS v
		WHERE NOT sweeper.silence_matches($1, jsonb_build_object($3::text, v))`, b, values, name).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("match the silence's %s matchers: %w", name, err)
	}
	return n, nil
}
