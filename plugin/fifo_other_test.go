//go:build !unix

package plugin

import "testing"

func mkfifo(t *testing.T, path string) {
	t.Skip("named pipes are a Unix concern")
}
