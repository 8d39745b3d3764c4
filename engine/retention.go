package engine

import "github.com/pgbus/pgbus/store"

// logQueuesKept says, once per pass, which queues retention passed over
// and what would let it prune them: each pass meets the same refusal
// until someone grants, and a line a pass is what shows it lasts.
func (c *Client) logQueuesKept(kept []store.QueueKept) {
	var denied []string
	var grants []store.MissingGrant
	seen := map[string]bool{}
	var refusal error
	for _, k := range kept {
		if k.Why != store.KeptDenied {
			continue
		}
		denied = append(denied, k.Queue)
		refusal = k.Err
		for _, g := range k.Grants {
			if !seen[g.Table] {
				seen[g.Table] = true
				grants = append(grants, g)
			}
		}
	}
	if len(denied) == 0 {
		return
	}
	advice := "grant the role SELECT, INSERT, UPDATE and DELETE on the queues' tables and archives, as the role that owns them " +
		"(ALTER DEFAULT PRIVILEGES, run as the role that creates queues, covers the queues created later)"
	if len(grants) > 0 {
		advice = grantAdvice(grants)
	}
	c.log.Warn("pgbus: retention passed over queues whose old archived messages and idempotency keys this database role may not delete; "+
		"they stay until it may, while the other queues are pruned: "+advice,
		"queues", denied, "role", c.store.User(), "err", refusal)
}
