package model

// EstimateUnderWay reports whether pool's estimate is being recomputed off the
// program's goroutine.
func (s *Store) EstimateUnderWay(pool string) bool {
	e := s.estimates[pool]
	return e != nil && e.next != nil
}

// WaitEstimate waits until pool's recomputation under way has landed, leaving it for
// the next Estimate to take.
func (s *Store) WaitEstimate(pool string) {
	e := s.estimates[pool]
	fresh := <-e.next
	e.next <- fresh
}
