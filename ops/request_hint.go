package ops

// The write requests as next steps: each Hint method returns the same
// operation with the request's arguments, named as hints name them, for a
// front end that cannot make the call itself (a read-only server) to say
// how it is made elsewhere. why is the hint's Why and may be empty; the
// hint adds to it what the step needs that the hint leaves out.

// Hint is r as a next step: the same retry, by its ids or by its filter.
// By ids, the filter's other fields are left out, as no retry by ids takes
// them; a corrected payload is repeated only when it is small and holds no
// secrets, the hint saying otherwise to pass it again.
func (r DLQRetryRequest) Hint(why string) Hint {
	if len(r.IDs) > 0 {
		return idsHint(r, why)
	}
	return hint(OpDLQRetry, why, r.Filter.hintArgs("limit", r.Limit, "dry_run", r.DryRun, "expect", r.Expect,
		"clear_deadline", r.ClearDeadline, "all", r.All, "rate", r.Rate)...)
}

// redry is r by filter as the dry run that shows what it selects now,
// with the expect that moves exactly that: the same call, every argument
// that shapes it kept (the limit as the call reads it), but not guarded by
// an expect. It returns the hint for a why.
func (r DLQRetryRequest) redry(why string) Hint {
	r.Limit, _ = bulkLimit(r.Limit)
	r.DryRun, r.Expect = true, ""
	return r.Hint(why)
}

// redry is r by filter as the dry run that shows what it selects now,
// with its expect, as for DLQRetryRequest.redry; a dry run needs no
// go-ahead, so the hint has no confirm.
func (r DLQDiscardRequest) redry(why string) Hint {
	r.Limit, _ = bulkLimit(r.Limit)
	r.DryRun, r.Expect, r.Confirm = true, "", false
	return r.Hint(why)
}

// Hint is r as a next step: the same discard, by its ids or by its filter.
func (r DLQDiscardRequest) Hint(why string) Hint {
	if len(r.IDs) > 0 {
		return hint(OpDLQDiscard, why, "ids", r.IDs, "queue", r.Filter.Queue, "dry_run", r.DryRun, "confirm", r.Confirm)
	}
	return hint(OpDLQDiscard, why, r.Filter.hintArgs("limit", r.Limit, "dry_run", r.DryRun, "expect", r.Expect,
		"confirm", r.Confirm, "all", r.All)...)
}

// ownDryRun is r as its own dry run, which selects what r would retry and
// gives the expect that guards it: without r's expect.
func (r DLQRetryRequest) ownDryRun() DLQRetryRequest {
	r.DryRun, r.Expect = true, ""
	return r
}

// ownDryRun is r as its own dry run, which selects what r would discard
// and gives the expect that guards it: without r's expect and
// confirmation.
func (r DLQDiscardRequest) ownDryRun() DLQDiscardRequest {
	r.DryRun, r.Expect, r.Confirm = true, "", false
	return r
}

// Hint is r as a next step: the same restore.
func (r DLQRestoreRequest) Hint(why string) Hint {
	return hint(OpDLQRestore, why, "ids", r.IDs, "queue", r.Queue, "dry_run", r.DryRun)
}

// Hint is r as a next step: the same purge, its age as a duration.
func (r DLQPurgeRequest) Hint(why string) Hint {
	return hint(OpDLQPurge, why, "queue", r.Queue, "older_than", FormatAge(r.OlderThan), "confirm", r.Confirm, "dry_run", r.DryRun)
}

// Hint is r as a next step of op, the operation r is for: OpQueuePause or
// OpQueueResume.
func (r QueueRequest) Hint(op, why string) Hint {
	return hint(op, why, "queue", r.Queue)
}

// Hint is r as a next step: the same run-now.
func (r QueueRunNowRequest) Hint(why string) Hint {
	return hint(OpQueueRunNow, why, "queue", r.Queue, "kind", r.Kind, "in_flight", r.InFlight, "dry_run", r.DryRun)
}

// Hint is r as a next step: the same reset.
func (r CircuitResetRequest) Hint(why string) Hint {
	return hint(OpCircuitReset, why, "name", r.Name, "end_opening_by_hand", r.EndOpeningByHand)
}
