package stripe

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

func TestIsCustomerID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		recipient string
		want      bool
	}{
		{"cus_Q1a2B3", true},
		{"cus_", false},
		{"CUS_Q1", false},
		{"cus_Q1@example.com", false},
		{"cus_Q1 ", false},
		{"jane@example.com", false},
		{"", false},
	} {
		if got := isCustomerID(tc.recipient); got != tc.want {
			t.Errorf("isCustomerID(%q) = %v, want %v", tc.recipient, got, tc.want)
		}
	}
}

func TestCustomerWindows(t *testing.T) {
	t.Parallel()
	at := func(h int) time.Time { return time.Date(2026, 12, 4, h, 0, 0, 0, time.UTC) }
	q := func(customer string, since, until time.Time) providers.Query {
		return providers.Query{Recipient: customer, Since: since, Until: until}
	}
	for _, tc := range []struct {
		desc string
		qs   []providers.Query
		want []customerWindow
	}{
		{desc: "none", qs: nil, want: nil},
		{desc: "one customer, two windows: their union",
			qs:   []providers.Query{q("cus_A", at(10), at(12)), q("cus_A", at(8), at(11))},
			want: []customerWindow{{"cus_A", at(8), at(12)}}},
		{desc: "two customers, in the order they come",
			qs:   []providers.Query{q("cus_B", at(10), at(12)), q("cus_A", at(8), at(11)), q("cus_B", at(9), at(13))},
			want: []customerWindow{{"cus_B", at(9), at(13)}, {"cus_A", at(8), at(11)}}},
		{desc: "an unbounded side stays unbounded",
			qs:   []providers.Query{q("cus_A", at(10), at(12)), q("cus_A", time.Time{}, at(11)), q("cus_A", at(9), time.Time{})},
			want: []customerWindow{{"cus_A", time.Time{}, time.Time{}}}},
	} {
		got := customerWindows(tc.qs)
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(customerWindow{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.desc, diff)
		}
	}
}
