package norm

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Connection validates a connection for PutConnection and returns it as
// stored, its times filled from now when zero.
func Connection(c store.Connection, now time.Time) (store.Connection, error) {
	switch {
	case c.Server == "":
		return c, invalid("connection has no server")
	case len(c.Sealed) == 0:
		return c, invalid("connection %s/%q has no sealed token set", c.Server, c.Subject)
	}
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now
	}
	if c.UpdatedAt.IsZero() {
		c.UpdatedAt = now
	}
	c.CreatedAt, c.UpdatedAt = Round(c.CreatedAt), Round(c.UpdatedAt)
	c.Sealed = Bytes(c.Sealed)
	return c, nil
}

// Lease validates the arguments of LeaseRefresh.
func Lease(server, holder string) error {
	switch {
	case server == "":
		return invalid("refresh lease has no server")
	case holder == "":
		return invalid("refresh lease of %s has no holder", server)
	}
	return nil
}

// ConnectFlow validates a flow for PutConnectFlow and returns it as stored.
func ConnectFlow(f store.ConnectFlow) (store.ConnectFlow, error) {
	switch {
	case f.ID == "":
		return f, invalid("connect flow has no ID")
	case f.Server == "":
		return f, invalid("connect flow has no server")
	case f.ExpiresAt.IsZero():
		return f, invalid("connect flow to %s has no expiry", f.Server)
	}
	f.ExpiresAt = Round(f.ExpiresAt)
	f.Sealed = Bytes(f.Sealed)
	return f, nil
}

// FlowKey is what the stores keep of a connect flow's ID: its SHA-256,
// hex.
func FlowKey(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:])
}

// Session validates a session for PutSession and returns it as stored.
func Session(s store.Session) (store.Session, error) {
	switch {
	case s.ID == "":
		return s, invalid("session has no ID")
	case s.ExpiresAt.IsZero():
		return s, invalid("session has no expiry")
	}
	s.ExpiresAt = Round(s.ExpiresAt)
	s.State = Bytes(s.State)
	s.Closed = false
	return s, nil
}
