package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sweeper/sweeper/ledger"
	"github.com/sweeper/sweeper/providers"
	"github.com/sweeper/sweeper/testkit/ledgertables"
)

// oneAccount is a provider account holding one delivered message per
// recipient and body, whichever block asks: what two blocks on one
// Twilio account see. A keyed account answers as if its search found the
// message for any op_key (a search by recipient and body).
func oneAccount(keyed bool) *fakeLookup {
	return &fakeLookup{byResemblance: !keyed, answers: []func(context.Context, providers.Query) ([]providers.Record, error){
		func(_ context.Context, q providers.Query) ([]providers.Record, error) {
			return []providers.Record{{
				ID: "SM_" + strings.TrimPrefix(q.Recipient, "+"), CreatedAt: q.FirstAttemptAt.Add(time.Second),
				Recipient: q.Recipient, PayloadHash: q.PayloadHash,
			}}, nil
		},
	}}
}

// TestOneRecordOneOperationAcrossBlocksAndReplicas (I3, I6): blocks sms and
// sms_alerts reach one account; 200 look-alike operations — 100 pairs, one
// row of each pair per block, same recipient and body, one message each at
// the account — are settled by two replicas at once. No record ever ends
// on two rows: of a pair found by key one is done and the other is in
// review (multiple_matches); a pair found by resemblance is two
// ambiguous_owner tickets.
func TestOneRecordOneOperationAcrossBlocksAndReplicas(t *testing.T) {
	t.Parallel()
	onEach(t, true, func(t *testing.T, lt ledgertables.Table) {
		for _, keyed := range []bool{true, false} {
			t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
				t.Parallel()
				replica := func(url string) map[string]*providers.Provider {
					account := oneAccount(keyed)
					provs := map[string]*providers.Provider{}
					for _, name := range []string{"sms", "sms_alerts"} {
						p := fakeProvider(name, account, 20*time.Second)
						if err := p.SetNamespace("fake:AC1"); err != nil {
							t.Fatal(err)
						}
						provs[name] = p
					}
					return provs
				}
				first := setupOn(t, lt, baseConfig, replica(""))
				second := first.replica(t, replica(first.url))
				for _, r := range []*bundle{first, second} {
					if err := r.sweeper.WriteNamespaces(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				var keys []string
				for i := range 100 {
					recipient := fmt.Sprintf("+1555%07d", i)
					for _, block := range []string{"sms", "sms_alerts"} {
						key := fmt.Sprintf("%s-%03d", block, i)
						first.claimAs(t, ledger.Attempt{OpKey: key, Workflow: "alerts", Provider: block, Action: "send_sms",
							Recipient: recipient, Payload: json.RawMessage(`{"body":"Your code is ready"}`)}, stale)
						keys = append(keys, key)
					}
				}
				var wg sync.WaitGroup
				for _, r := range []*bundle{first, second} {
					client := r.startClient(t)
					wg.Go(func() { r.sweep(t, client) })
				}
				wg.Wait()
				first.waitSettled(t, keys, 120*time.Second)

				if n := first.count(t, first.sql(`SELECT count(*) FROM (SELECT {c:provider_record_id} FROM {T}
				WHERE {c:provider_record_id} IS NOT NULL AND {c:provider} IN ('sms', 'sms_alerts')
				GROUP BY {c:provider_record_id} HAVING count(*) > 1) AS twice`)); n != 0 {
					t.Errorf("%d records prove two operations across the blocks", n)
				}
				done := first.count(t, first.sql(`SELECT count(*) FROM {T} WHERE {c:status} = {w:done}`))
				multiple := first.count(t, `SELECT count(*) FROM sweeper.tickets WHERE reason = 'multiple_matches'`)
				ambiguous := first.count(t, `SELECT count(*) FROM sweeper.tickets WHERE reason = 'ambiguous_owner'`)
				want := [3]int{0, 0, 200}
				if keyed {
					want = [3]int{100, 100, 0}
				}
				if got := [3]int{done, multiple, ambiguous}; got != want {
					t.Errorf("done, multiple_matches, ambiguous_owner = %v; want %v", got, want)
				}
			})
		}
	})
}
