package ledger

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// goodRaw is a row sweeper can look up, as scanned.
func goodRaw() rawOperation {
	text := func(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }
	at := pgtype.Timestamptz{Time: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC), Valid: true}
	return rawOperation{
		id: pgtype.Int8{Int64: 7, Valid: true}, attempts: pgtype.Int8{Int64: 2, Valid: true},
		opKey: text("order-7"), workflow: text("billing"), provider: text("mailer"), action: text("send"),
		recipient: text("jane@example.com"), payloadHash: text(strings.Repeat("a", 64)), status: text("pending"),
		payload: []byte(`{"a":1}`), firstAttemptAt: at, lastAttemptAt: at, createdAt: at, updatedAt: at,
	}
}

// TestOperationOfBounds: each bound holds at its limit and is crossed one
// character past it; a value is named by its column, never quoted.
func TestOperationOfBounds(t *testing.T) {
	t.Parallel()
	text := func(s string) pgtype.Text { return pgtype.Text{String: s, Valid: true} }
	x := func(n int) pgtype.Text { return text(strings.Repeat("é", n)) } // characters, not bytes
	for _, tc := range []struct {
		desc   string
		change func(*rawOperation)
		want   string
	}{
		{"good", func(*rawOperation) {}, ""},
		{"op_key at 255", func(r *rawOperation) { r.opKey = x(255) }, ""},
		{"op_key at 256", func(r *rawOperation) { r.opKey = x(256) }, "op_key is longer than 255 characters (256)"},
		{"provider at 64", func(r *rawOperation) { r.provider = x(64) }, ""},
		{"provider at 65", func(r *rawOperation) { r.provider = x(65) }, "provider is longer than 64 characters (65)"},
		{"recipient at 320", func(r *rawOperation) { r.recipient = x(320) }, ""},
		{"recipient at 321", func(r *rawOperation) { r.recipient = x(321) }, "recipient is longer than 320 characters (321)"},
		{"provider_record_id at 256", func(r *rawOperation) { r.providerRecordID = x(256) }, "provider_record_id is longer than 255 characters (256)"},
		{"id NULL", func(r *rawOperation) { r.id = pgtype.Int8{} }, "id is NULL"},
		{"op_key NULL", func(r *rawOperation) { r.opKey = pgtype.Text{} }, "op_key is NULL"},
		{"provider empty", func(r *rawOperation) { r.provider = text("") }, "provider is empty"},
		{"recipient NULL: optional", func(r *rawOperation) { r.recipient = pgtype.Text{} }, ""},
		{"op_key not UTF-8", func(r *rawOperation) { r.opKey = text("k\xff") }, "op_key is not valid UTF-8"},
		{"payload_hash upper case", func(r *rawOperation) { r.payloadHash = text(strings.Repeat("A", 64)) }, "payload_hash is not 64 lowercase hex characters"},
		{"first_attempt_at NULL", func(r *rawOperation) { r.firstAttemptAt = pgtype.Timestamptz{} }, "first_attempt_at is NULL"},
		{"payload with NUL", func(r *rawOperation) { r.payload = []byte(`{"a\u0000":1}`) }, `payload holds the character \u0000, which jsonb cannot store`},
		{"payload with an escaped backslash", func(r *rawOperation) { r.payload = []byte(`{"a\\u0000":1}`) }, ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			r := goodRaw()
			tc.change(&r)
			op := Native().operationOf(r)
			if op.Invalid != tc.want {
				t.Errorf("Invalid %q, want %q", op.Invalid, tc.want)
			}
			if strings.Contains(op.Invalid, "é") || strings.Contains(op.Invalid, "AAA") {
				t.Errorf("Invalid quotes the value: %q", op.Invalid)
			}
		})
	}
}

// BenchmarkOperationOf is the cost of judging one good row, which every
// read of the ledger pays per row.
func BenchmarkOperationOf(b *testing.B) {
	r := goodRaw()
	t := Native()
	for b.Loop() {
		_ = t.operationOf(r)
	}
}
