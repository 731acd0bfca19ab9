package store

import "time"

func timeNow() time.Time { return time.Now() }
