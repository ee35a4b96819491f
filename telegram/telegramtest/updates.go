package telegramtest

// The getUpdates side of the fake: long polling, offsets that confirm
// updates, and the 409 Telegram gives a second reader.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p params) {
	var offset, timeout int64
	limit := int64(100)
	for name, dst := range map[string]*int64{"offset": &offset, "timeout": &timeout, "limit": &limit} {
		if v := p[name]; v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				writeError(w, http.StatusBadRequest, "Bad Request: invalid "+name, 0)
				return
			}
			*dst = n
		}
	}
	limit = min(max(limit, 1), 100)
	var allowed []string
	if raw, ok := p["allowed_updates"]; ok && raw != "" {
		if err := json.Unmarshal([]byte(raw), &allowed); err != nil {
			writeError(w, http.StatusBadRequest, "Bad Request: can't parse allowed updates", 0)
			return
		}
		if allowed == nil {
			allowed = []string{}
		}
	}

	if !s.acquirePoll(r) {
		writeError(w, http.StatusConflict, "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running", 0)
		return
	}
	defer func() {
		s.mu.Lock()
		s.polling = false
		s.notifyLocked()
		s.mu.Unlock()
	}()

	s.mu.Lock()
	if allowed != nil {
		// Like Telegram, the choice sticks for later calls that omit it.
		s.allowed = allowed
	}
	s.confirmLocked(offset)
	s.mu.Unlock()

	timer := time.NewTimer(time.Duration(max(timeout, 0)) * time.Second)
	defer timer.Stop()
	for {
		s.mu.Lock()
		batch := s.pendingLocked(offset, int(limit))
		ch := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || timeout <= 0 {
			writeResult(w, batch)
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			writeResult(w, batch)
			return
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
	}
}

// acquirePoll marks a getUpdates in progress, waiting conflictGrace for one
// already running to end; false means a concurrent poll holds it.
func (s *Server) acquirePoll(r *http.Request) bool {
	grace := time.NewTimer(conflictGrace)
	defer grace.Stop()
	s.mu.Lock()
	for s.polling {
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-grace.C:
			return false
		case <-r.Context().Done():
			return false
		case <-s.done:
			return false
		}
		s.mu.Lock()
	}
	s.polling = true
	s.mu.Unlock()
	return true
}

// confirmLocked forgets updates as Telegram does: a positive offset
// confirms every update before it, a negative one keeps only the last
// -offset updates.
func (s *Server) confirmLocked(offset int64) {
	switch {
	case offset > 0:
		s.updates = slices.DeleteFunc(s.updates, func(u update) bool { return u.id < offset })
	case offset < 0 && int64(len(s.updates)) > -offset:
		s.updates = slices.Clone(s.updates[int64(len(s.updates))+offset:])
	}
}

// pendingLocked returns up to limit queued updates from offset on of the
// allowed types, always a non-nil slice so the answer is [] rather than null.
func (s *Server) pendingLocked(offset int64, limit int) []map[string]any {
	out := []map[string]any{}
	for _, u := range s.updates {
		if len(out) == limit {
			break
		}
		if u.id < offset || (len(s.allowed) > 0 && !slices.Contains(s.allowed, u.kind)) {
			continue
		}
		out = append(out, u.wire)
	}
	return out
}

// params are a request's parameters: JSON strings unquoted, other JSON
// values (numbers, objects, arrays) as their JSON text, the way the form
// encoding carries them too.
type params map[string]string
