package store

import "context"

// MaxMessage is the largest message a Messenger sends: what fits one
// PostgreSQL NOTIFY payload (8000 bytes) once encoded as base64.
const MaxMessage = 5800

// Messenger delivers short messages between the processes that share a
// store, to a named box: how a replica hands another what only that one
// can serve (a caller's answer to a server's request it sent). The
// PostgreSQL store implements it with LISTEN and NOTIFY; SQLite and memory
// stores do not (their replicas share one machine, or there is one).
type Messenger interface {
	// Listen calls fn, on a goroutine of the Messenger's, with each
	// message sent to box from the moment Listen returns until ctx is
	// done. A box name is 1 to 48 letters, digits, '_' or '-'.
	Listen(ctx context.Context, box string, fn func(msg []byte)) error
	// Send sends msg (at most MaxMessage bytes) to box: delivered at most
	// once to each process listening on box when it is sent, to none when
	// none is. ErrInvalid for a bad box name or a message too large.
	Send(ctx context.Context, box string, msg []byte) error
}
