package authserver

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRevokeFreesARegistrationSlot: the cap message says to revoke clients;
// a revoked client no longer holds a slot.
func TestRevokeFreesARegistrationSlot(t *testing.T) {
	srv := openTest(t, Options{MaxClients: 2})
	_, first := registerFrom(srv, "192.0.2.1:4000")
	registerFrom(srv, "192.0.2.2:4000")
	if code, _ := registerFrom(srv, "192.0.2.3:4000"); code != http.StatusServiceUnavailable {
		t.Fatalf("over the cap: %d", code)
	}
	if err := srv.RevokeClient(first); err != nil {
		t.Fatal(err)
	}
	if code, _ := registerFrom(srv, "192.0.2.3:4000"); code != http.StatusCreated {
		t.Errorf("after 'auth revoke' of one of 2: %d, want 201", code)
	}
}

// TestUnapprovedRegistrationsExpire: a registration never approved is gone
// after a day, and frees its slot.
func TestUnapprovedRegistrationsExpire(t *testing.T) {
	srv := openTest(t, Options{MaxClients: 1, Resources: notesOnly})
	_, old := registerFrom(srv, "192.0.2.1:4000")
	c, err := srv.store.client(old)
	if err != nil {
		t.Fatal(err)
	}
	c.Created = c.Created.Add(-25 * time.Hour)
	if err := srv.store.saveClient(c); err != nil {
		t.Fatal(err)
	}
	if code, _ := registerFrom(srv, "192.0.2.2:4000"); code != http.StatusCreated {
		t.Errorf("with the only slot held by a registration never approved for 25 h: %d, want 201", code)
	}
	rec := serve(srv, httptest.NewRequest(http.MethodGet, PathAuthorize+"?"+authorizeQuery(old, "https://app.example/cb"), nil), "192.0.2.1:4000")
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not known") {
		t.Errorf("the expired registration's authorization request: %d", rec.Code)
	}
}

// TestRegistrationLimitPerAddress: one address registering as fast as it
// may does not hold everyone else at 429.
func TestRegistrationLimitPerAddress(t *testing.T) {
	srv := openTest(t, Options{})
	refused := 0
	for range 40 {
		if code, _ := registerFrom(srv, "203.0.113.5:4000"); code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused != 20 {
		t.Errorf("40 registrations from one address in a burst: %d refused, want 20", refused)
	}
	if code, _ := registerFrom(srv, "[2001:db8:1:2::7]:4000"); code != http.StatusCreated {
		t.Errorf("another address meanwhile: %d, want 201", code)
	}
}
