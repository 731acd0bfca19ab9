package audit

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ErrDuration is wrapped by ParseDuration's and ParseSince's errors.
var ErrDuration = errors.New("audit: bad duration")

// maxDays bounds a duration in days (about 100 years), so that it fits a
// time.Duration.
const maxDays = 36500

// ParseDuration reads a retention or look-back: a Go duration ("36h",
// "90m") or a whole number of days ("90d"). It must be positive.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty (want e.g. 90d or 36h)", ErrDuration)
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || days == "" || days[0] == '+' || days[0] == '-' {
			return 0, fmt.Errorf("%w: %q (want a whole number of days, e.g. 90d)", ErrDuration, s)
		}
		if n <= 0 || n > maxDays {
			return 0, fmt.Errorf("%w: %q (days must be 1 to %d)", ErrDuration, s, maxDays)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%w: %q (want e.g. 90d or 36h): %w", ErrDuration, s, err)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %q must be positive", ErrDuration, s)
	}
	return d, nil
}

// ParseSince reads export's --since: an RFC 3339 time
// ("2026-03-01T12:00:00Z"), a date ("2026-03-01", UTC midnight), or a
// duration before now (ParseDuration: "24h", "7d").
func ParseSince(s string, now time.Time) (time.Time, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return time.Time{}, fmt.Errorf("%w: --since is empty (want an RFC 3339 time, a date or a duration like 24h)", ErrDuration)
	}
	if at, err := time.Parse(time.RFC3339Nano, t); err == nil {
		return at, nil
	}
	if at, err := time.Parse(time.DateOnly, t); err == nil {
		return at, nil
	}
	d, err := ParseDuration(t)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: --since %q is neither an RFC 3339 time, a date (YYYY-MM-DD) nor a duration like 24h or 7d", ErrDuration, s)
	}
	return now.Add(-d), nil
}
