package providers_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sweeper/sweeper/providers"
)

func TestMergeDuplicates(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	rec := func(id string, edit ...func(*providers.Record)) providers.Record {
		r := providers.Record{ID: id, CreatedAt: at, Recipient: "+15550100777", PayloadHash: "h", Fields: map[string]any{"body": "hi"}, Excerpt: "status=sent"}
		for _, e := range edit {
			e(&r)
		}
		return r
	}
	for _, tc := range []struct {
		desc      string
		in        []providers.Record
		want      []providers.Record
		wantField string
	}{
		{desc: "none", in: nil, want: nil},
		{desc: "distinct ids are kept in order", in: []providers.Record{rec("b"), rec("a")}, want: []providers.Record{rec("b"), rec("a")}},
		{desc: "identical copies are one record", in: []providers.Record{rec("a"), rec("b"), rec("a")}, want: []providers.Record{rec("a"), rec("b")}},
		{desc: "the same time in another zone is the same", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.CreatedAt = at.In(time.FixedZone("x", 3600)) })},
			want: []providers.Record{rec("a")}},
		{desc: "copies may differ in their excerpt", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.Excerpt = "status=delivered" })},
			want: []providers.Record{rec("a")}},
		{desc: "another payload hash", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.PayloadHash = "other" })}, wantField: "payload_hash"},
		{desc: "another recipient", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.Recipient = "+15550100999" })}, wantField: "recipient"},
		{desc: "another creation time", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.CreatedAt = at.Add(time.Second) })}, wantField: "created_at"},
		{desc: "other fields", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.Fields = map[string]any{"body": "ho"} })}, wantField: "fields"},
		{desc: "fields on one copy only", in: []providers.Record{rec("a"), rec("a", func(r *providers.Record) { r.Fields = nil })}, wantField: "fields"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			t.Parallel()
			got, err := providers.MergeDuplicates(tc.in)
			if tc.wantField != "" {
				var dup *providers.DuplicateError
				if !errors.As(err, &dup) || dup.Field != tc.wantField || dup.ID != "a" {
					t.Fatalf("MergeDuplicates = %v, %v; want a DuplicateError on %s", got, err, tc.wantField)
				}
				if got != nil {
					t.Errorf("records %v alongside the error", got)
				}
				if want := `records 0 and 1 have the same id "a" but different ` + tc.wantField; err.Error() != want {
					t.Errorf("error %q, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
		})
	}
}
