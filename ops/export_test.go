package ops

// ResourceError is what an operation that reads (write false) or writes in
// one transaction answers with err: the refusals a test cannot provoke
// honestly (a full disk, memory run out) are checked on the error value.
func ResourceError(err error, write bool) error {
	e := reads
	if write {
		e = writesOnce
	}
	return resourceError(err, e)
}
