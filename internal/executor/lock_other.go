//go:build !unix

package executor

import "errors"

// tryLock has no file lock to take on this system: instances are random.
func tryLock(string) (func(), error) {
	return nil, errors.New("no file locks on this system")
}
