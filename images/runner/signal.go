package runner

import "sync"

// Signal broadcasts "something changed" to any number of waiters: C
// returns a channel that is closed at the next Notify.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns the channel the next Notify closes.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes every waiter of C.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
