package dashboard

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A logout remembers a login as ended, until it would have expired, but
// not a session that never logged in: it grants nothing, and remembering
// every such logout for 12 hours let anyone fill the server's memory.
func TestLogoutRemembersOnlyLogins(t *testing.T) {
	s := &server{cfg: Config{Now: time.Now}, key: []byte("0123456789abcdef0123456789abcdef"), ended: endedSessions{until: map[string]time.Time{}}}
	logout := func(sess session) {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8080/logout", nil)
		r.AddCookie(&http.Cookie{Name: cookieName(r), Value: sess.value})
		s.logout(httptest.NewRecorder(), r, nil)
	}
	for range 100 {
		logout(s.newSession(false))
	}
	if n := len(s.ended.until); n != 0 {
		t.Fatalf("100 logouts of sessions that never logged in left %d ended sessions; want none", n)
	}
	login := s.newSession(true)
	logout(login)
	if !s.ended.ended(login.value) || len(s.ended.until) != 1 {
		t.Fatalf("the logout of a login is not remembered (%d ended)", len(s.ended.until))
	}
}
