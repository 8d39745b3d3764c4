package store

// Merge adds another report's counts, moved messages and queues to r,
// keeping the first error and the bound on Moved. Callers that retry per
// DLQ merge the reports into one.
func (r *RetryReport) Merge(other RetryReport) {
	r.DryRun = r.DryRun || other.DryRun
	r.More = r.More || other.More
	r.Retried += other.Retried
	r.CameBack += other.CameBack
	r.Failed += other.Failed
	r.Gone += other.Gone
	r.DeadlinesPassed += other.DeadlinesPassed
	r.Unsure = append(r.Unsure, other.Unsure...)
	if r.FirstError == "" {
		r.FirstError, r.firstErr = other.FirstError, other.firstErr
	}
	for _, m := range other.Moved {
		if len(r.Moved) < MaxRetryMoved {
			r.Moved = append(r.Moved, m)
		} else {
			r.MovedOmitted++
		}
	}
	r.MovedOmitted += other.MovedOmitted
	if other.VisibleUntil.After(r.VisibleUntil) {
		r.VisibleUntil = other.VisibleUntil
	}
	for _, q := range other.Queues {
		r.addQueue(q)
	}
	for _, f := range other.Failures {
		if len(r.Failures) < MaxRetryMoved {
			r.Failures = append(r.Failures, f)
		}
	}
}

// Err returns the error of the first message that could not be retried,
// as it was raised (a database error keeps its code), or nil.
func (r *RetryReport) Err() error { return r.firstErr }
