package sqlstore

// GroupStats returns how many transactions of more than one op group
// commit has committed, and how many ops they held.
func (s *Store) GroupStats() (batches, ops int64) {
	if s.gc == nil {
		return 0, 0
	}
	return s.gc.batches.Load(), s.gc.batched.Load()
}

// GroupQueue returns how many ops the batch being run holds and how many
// wait for the next one.
func (s *Store) GroupQueue() (inflight, queued int) {
	if s.gc == nil {
		return 0, 0
	}
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return s.gc.inflight, len(s.gc.queue)
}

// GroupClosing reports whether Close has begun refusing new ops.
func (s *Store) GroupClosing() bool {
	if s.gc == nil {
		return false
	}
	s.gc.mu.Lock()
	defer s.gc.mu.Unlock()
	return s.gc.closed
}

// GroupYielded returns how many times a lone leader of the commit queue
// yielded to the calls in flight (commitdelay).
func (s *Store) GroupYielded() int64 { return s.gc.delay.Yielded() }
