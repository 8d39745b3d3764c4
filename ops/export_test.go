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

// ViewBytesPeak returns the most payload bytes the views of s worked on
// at once.
func ViewBytesPeak(s *Service) int64 { return s.views.peak.Load() }

// ViewBytesHeld returns the payload bytes the views of s work on now.
func ViewBytesHeld(s *Service) int64 { return s.views.held.Load() }

// ViewsWaiting returns how many calls of s wait for their share of the
// payload bytes views may work on.
func ViewsWaiting(s *Service) int64 { return s.views.waiting.Load() }

// WhileViewHeld makes f run while a call of s holds its share of the
// payload bytes views may work on, before it views.
func WhileViewHeld(s *Service, f func()) { s.views.whileHeld = f }

// ViewPayloadBytesRead returns the payload bytes the views of s read from
// the store so far.
func ViewPayloadBytesRead(s *Service) int64 { return s.views.read.Load() }
