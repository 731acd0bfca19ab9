package testserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build compiles cmd/fixture into dir and returns the binary's path. Call it
// once from TestMain (dir is usually a os.MkdirTemp directory the caller
// removes afterwards).
func Build(dir string) (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("testserver: cannot locate package source")
	}
	bin := filepath.Join(dir, "fixture")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/fixture")
	cmd.Dir = filepath.Dir(file)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("testserver: building fixture: %w", err)
	}
	return bin, nil
}
