package source

import (
	"sync"

	"github.com/mcotui/mcotui/tui/model"
)

// Subscription is one program's view of a Cluster: a model.Source whose snapshot is the
// caches at the time of Subscribe and whose channel carries every change after it.
//
// Many programs (SSH sessions) share one set of informers, and a stuck session must not
// hold up the informers or the other sessions. So the informers' handlers never block
// on a subscriber: they put the event in the subscription's pending set, keyed by kind
// and name, where a newer event for the same object replaces the older one, and a pump
// goroutine moves pending events into the channel as the program takes them. A session
// that stops reading holds at most one pending event per object (the latest, which is
// all the Store needs, as it applies events idempotently), however long it stalls.
type Subscription struct {
	info     model.Info
	snapshot []model.Event
	out      chan model.Event

	mu      sync.Mutex
	pending map[eventKey]model.Event
	order   []eventKey // first-pending order, so that a burst keeps roughly its order

	wake      chan struct{} // one pending wake-up at most
	quit      chan struct{}
	closeOnce sync.Once
	done      chan struct{} // closed when the pump has closed out

	unsubscribe func(*Subscription)
}

type eventKey struct {
	kind model.Kind
	name string
}

func newSubscription(info model.Info, buffer int, unsubscribe func(*Subscription)) *Subscription {
	s := &Subscription{
		info:        info,
		out:         make(chan model.Event, buffer),
		pending:     map[eventKey]model.Event{},
		wake:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		done:        make(chan struct{}),
		unsubscribe: unsubscribe,
	}
	go s.pump()
	return s
}

// Info implements model.Source.
func (s *Subscription) Info() model.Info { return s.info }

// Snapshot implements model.Source.
func (s *Subscription) Snapshot() []model.Event { return s.snapshot }

// Events implements model.Source. It is closed when the subscription or its Cluster is
// closed.
func (s *Subscription) Events() <-chan model.Event { return s.out }

// Close ends the subscription: the Cluster stops delivering to it and its channel is
// closed. Events still pending are dropped. Close may be called more than once.
func (s *Subscription) Close() {
	s.closeOnce.Do(func() {
		if s.unsubscribe != nil {
			s.unsubscribe(s)
		}
		close(s.quit)
	})
	<-s.done
}

// enqueue records e as pending, replacing any older pending event of the same object.
// It never blocks.
func (s *Subscription) enqueue(e model.Event) {
	k := eventKey{kind: e.Kind, name: e.Name()}
	s.mu.Lock()
	if _, ok := s.pending[k]; !ok {
		s.order = append(s.order, k)
	}
	s.pending[k] = e
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take removes and returns every pending event.
func (s *Subscription) take() []model.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]model.Event, 0, len(s.order))
	for _, k := range s.order {
		out = append(out, s.pending[k])
	}
	clear(s.pending)
	s.order = s.order[:0]
	return out
}

func (s *Subscription) pump() {
	defer close(s.done)
	defer close(s.out)
	for {
		select {
		case <-s.quit:
			return
		case <-s.wake:
		}
		for _, e := range s.take() {
			select {
			case s.out <- e:
			case <-s.quit:
				return
			}
		}
	}
}

var _ model.Source = (*Subscription)(nil)
