package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-dev/gatehouse/store"
)

var _ store.Messenger = (*Store)(nil)

// channel is the NOTIFY channel of box in this store's schema. Channels
// are per database, not per schema: two deployments in two schemas of one
// database would hear each other's messages on a box of the same name, so
// each channel carries the schema's mark (chanPrefix) before the box.
func (s *Store) channel(box string) (string, error) {
	if len(box) == 0 || len(box) > 48 {
		return "", fmt.Errorf("%w: messenger box %q: 1 to 48 characters", store.ErrInvalid, box)
	}
	for _, c := range box {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return "", fmt.Errorf("%w: messenger box %q: letters, digits, '_' and '-' only", store.ErrInvalid, box)
		}
	}
	return s.chans + box, nil
}

// chanPrefix is the start of the NOTIFY channels of the store whose tables
// are in schema: "gh_", 8 hex digits of the schema name's SHA-256, "_"
// (12 characters: with a box of 48, 60, under PostgreSQL's 63).
func chanPrefix(schema string) string {
	sum := sha256.Sum256([]byte(schema))
	return "gh_" + hex.EncodeToString(sum[:4]) + "_"
}

// Send implements store.Messenger: one NOTIFY (pg_notify), its payload
// the message in base64 (a payload is text).
func (s *Store) Send(ctx context.Context, box string, msg []byte) error {
	ch, err := s.channel(box)
	if err != nil {
		return err
	}
	if len(msg) > store.MaxMessage {
		return fmt.Errorf("%w: a message of %d bytes (at most %d)", store.ErrInvalid, len(msg), store.MaxMessage)
	}
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, ch, base64.StdEncoding.EncodeToString(msg)); err != nil {
		return fmt.Errorf("store: send to %s: %w", box, err)
	}
	return nil
}

// Listen implements store.Messenger. It listens on a connection of its
// own (taken from the pool, no longer the pool's: closing the store does
// not wait for it), and listens again on a new one, after a second, when
// that connection fails (messages sent in between are lost).
func (s *Store) Listen(ctx context.Context, box string, fn func(msg []byte)) error {
	ch, err := s.channel(box)
	if err != nil {
		return err
	}
	listen := func() (*pgx.Conn, error) {
		pc, err := s.pool.Acquire(ctx)
		if err != nil {
			return nil, err
		}
		conn := pc.Hijack()
		if _, err := conn.Exec(ctx, `LISTEN "`+ch+`"`); err != nil {
			_ = conn.Close(context.Background())
			return nil, err
		}
		return conn, nil
	}
	conn, err := listen()
	if err != nil {
		return fmt.Errorf("store: listen on %s: %w", box, err)
	}
	go func() {
		for {
			n, err := conn.WaitForNotification(ctx)
			if err == nil {
				if msg, derr := base64.StdEncoding.DecodeString(n.Payload); derr == nil {
					fn(msg)
				}
				continue
			}
			_ = conn.Close(context.Background())
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Second):
				}
				if conn, err = listen(); err == nil {
					break
				}
			}
		}
	}()
	return nil
}
