package engine

import (
	"testing"

	"github.com/pgbus/pgbus/store"
)

// Of two outcomes of one message in a batch, the earlier read's, whose
// claim lapsed, is left out; the others are kept in their order.
func TestLatestReads(t *testing.T) {
	t.Parallel()
	batch := []result{
		{claim: store.Claim{MsgID: 7, ReadCount: 2}, action: actionDeadLetter},
		{claim: store.Claim{MsgID: 8, ReadCount: 1}},
		{claim: store.Claim{MsgID: 7, ReadCount: 3}, action: actionDeadLetter},
		{claim: store.Claim{MsgID: 9, ReadCount: 5}},
	}
	got := latestReads(batch)
	if len(got) != 3 || got[0].claim.MsgID != 8 || got[1].claim != (store.Claim{MsgID: 7, ReadCount: 3}) || got[2].claim.MsgID != 9 {
		t.Fatalf("latest reads %+v", got)
	}
	if one := batch[1:2]; len(latestReads(one)) != 1 {
		t.Fatal("a batch without repeats should be kept whole")
	}
}
