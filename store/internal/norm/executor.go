package norm

import (
	"fmt"
	"time"

	"github.com/gatehouse-dev/gatehouse/store"
)

// Executor validates an executor to register and returns it as stored:
// StartedAt filled from now when zero, times rounded, StoppedAt zero.
func Executor(e store.Executor, now time.Time) (store.Executor, error) {
	switch {
	case e.ID == "":
		return e, invalid("executor ID is empty")
	case e.Instance == "":
		return e, invalid("executor %q has no instance", e.ID)
	case e.AliveUntil.IsZero():
		return e, invalid("executor %q has no AliveUntil", e.ID)
	}
	if e.StartedAt.IsZero() {
		e.StartedAt = now
	}
	e.StartedAt, e.AliveUntil, e.StoppedAt = Round(e.StartedAt), Round(e.AliveUntil), time.Time{}
	return e, nil
}

// ExecutorNotFound builds the error for an unknown executor.
func ExecutorNotFound(id string) error { return NotFound("executor %q", id) }

// ExecutorStopped builds the error for a stopped executor.
func ExecutorStopped(id string, at time.Time) error {
	return fmt.Errorf("%w: executor %q stopped at %s", store.ErrExecutorStopped, id, at.Format(time.RFC3339Nano))
}

// Conflict builds an ErrConflict error.
func Conflict(format string, args ...any) error {
	return fmt.Errorf("%w: %s", store.ErrConflict, fmt.Sprintf(format, args...))
}

// Invalid builds an ErrInvalid error.
func Invalid(format string, args ...any) error { return invalid(format, args...) }
