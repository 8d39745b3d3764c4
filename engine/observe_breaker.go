package engine

// BreakerObserver is an Observer that is also told when this client's work
// moves a circuit breaker to another state: a failure opens it (from
// closed, or from half_open when the probe failed), a claimed probe makes
// it half_open (reported from open, also when a lost probe is claimed
// again), a probe's success closes it, and a probe whose job said nothing
// of the downstream (bad input, a discard, a snooze, a stop) is given back,
// making it open again, its cool-off over. A Client calls it for every
// observer in Config.Observers that implements it, on worker goroutines;
// it must return quickly. Changes made by other processes, or by a reset,
// are not reported here: the breakers' table says the state.
type BreakerObserver interface {
	BreakerChanged(name, from, to string)
}

// breakerChanged tells the observers that care of a breaker's change.
func (o observers) breakerChanged(name, from, to string) {
	if from == to {
		return
	}
	for _, ob := range o.list {
		if bo, ok := ob.(BreakerObserver); ok {
			o.guard(ob, "BreakerChanged", func() { bo.BreakerChanged(name, from, to) })
		}
	}
}
