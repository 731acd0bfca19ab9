package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// guardRepo is a git repository in a temporary directory holding
// bench/guard.sh and bench/lib.sh of this checkout and three commits on
// main, c[0] to c[2] (HEAD), plus c[3] on a side branch off c[0].
type guardRepo struct {
	dir string
	c   [4]string
}

func newGuardRepo(t *testing.T) *guardRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: bench/guard.sh's resolution needs it")
	}
	r := &guardRepo{dir: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(r.dir, "bench"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"guard.sh", "lib.sh"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "bench", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.dir, "bench", f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.git(t, "init", "-q", "-b", "main")
	r.git(t, "add", "bench")
	r.git(t, "commit", "-q", "-m", "c0")
	r.c[0] = r.git(t, "rev-parse", "HEAD")
	r.git(t, "checkout", "-q", "-b", "side")
	r.git(t, "commit", "-q", "--allow-empty", "-m", "c3")
	r.c[3] = r.git(t, "rev-parse", "HEAD")
	r.git(t, "checkout", "-q", "main")
	for i := 1; i <= 2; i++ {
		r.git(t, "commit", "-q", "--allow-empty", "-m", "c"+string(rune('0'+i)))
		r.c[i] = r.git(t, "rev-parse", "HEAD")
	}
	return r
}

// git runs git in the repository and returns its trimmed output.
func (r *guardRepo) git(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, b)
	}
	return strings.TrimSpace(string(b))
}

// pin writes bench/guard-release (not committed: the guard reads the file
// of the working tree).
func (r *guardRepo) pin(t *testing.T, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, "bench", "guard-release"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// resolve runs the guard's resolution alone with env and returns its exit
// code and output.
func (r *guardRepo) resolve(t *testing.T, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(r.dir, "bench", "guard.sh"))
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GUARD_RESOLVE_ONLY=1", "GUARD_BASE=", "GUARD_RELEASE=", "GIT_CONFIG_GLOBAL=/dev/null")
	cmd.Env = append(cmd.Env, env...)
	b, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running guard.sh: %v", err)
		}
		code = ee.ExitCode()
	}
	return code, string(b)
}

// TestGuardBases checks which commits bench/guard.sh compares this
// checkout with: the base (GUARD_BASE, the merge-base with origin/main, or
// HEAD~1) and the release (GUARD_RELEASE, the newest tag v*, or the commit
// bench/guard-release pins), and that each way the pin can be wrong stops
// the guard with a message that says what to fix.
func TestGuardBases(t *testing.T) {
	r := newGuardRepo(t)
	c := r.c
	want := func(t *testing.T, out, base, release string) {
		t.Helper()
		if !strings.Contains(out, "base="+base+" ") {
			t.Errorf("base: want %s, got:\n%s", base, out)
		}
		if release == "none" {
			if !strings.Contains(out, "release=none") {
				t.Errorf("release: want none, got:\n%s", out)
			}
		} else if !strings.Contains(out, "release="+release+" ") {
			t.Errorf("release: want %s, got:\n%s", release, out)
		}
	}
	ok := func(t *testing.T, env ...string) string {
		t.Helper()
		code, out := r.resolve(t, env...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		return out
	}
	refused := func(t *testing.T, says string, env ...string) {
		t.Helper()
		code, out := r.resolve(t, env...)
		if code != 2 || !strings.Contains(out, says) {
			t.Errorf("want exit 2 saying %q, got exit %d:\n%s", says, code, out)
		}
	}

	t.Run("no pin, no tag: HEAD~1 alone", func(t *testing.T) {
		want(t, ok(t), c[1], "none")
	})
	t.Run("the pinned commit", func(t *testing.T) {
		r.pin(t, "# why\n"+c[0][:7]+"  # the release\n")
		want(t, ok(t), c[1], c[0])
	})
	t.Run("a pin that is the base is measured once", func(t *testing.T) {
		r.pin(t, c[1]+"\n")
		out := ok(t)
		want(t, out, c[1], "none")
		if !strings.Contains(out, "is the base itself") {
			t.Errorf("no word that the release is the base:\n%s", out)
		}
	})
	t.Run("GUARD_OLD_BIN: a pin equal to the base is still measured", func(t *testing.T) {
		r.pin(t, c[1]+"\n")
		want(t, ok(t, "GUARD_OLD_BIN=/nonexistent"), c[1], c[1])
	})
	t.Run("a pin that is not hex", func(t *testing.T) {
		r.pin(t, "main\n")
		refused(t, "must name a commit (hex)")
	})
	t.Run("an empty pin", func(t *testing.T) {
		r.pin(t, "# nothing but a comment\n\n")
		refused(t, "must name a commit (hex)")
	})
	t.Run("a pin this clone does not have", func(t *testing.T) {
		r.pin(t, "0123456789abcdef0123456789abcdef01234567\n")
		refused(t, "which this clone does not have")
	})
	t.Run("a pin off HEAD's history", func(t *testing.T) {
		r.pin(t, c[3]+"\n")
		refused(t, "not an ancestor of HEAD")
	})
	t.Run("GUARD_RELEASE overrides the pin, none drops it", func(t *testing.T) {
		r.pin(t, c[0]+"\n")
		want(t, ok(t, "GUARD_RELEASE="+c[3]), c[1], c[3])
		want(t, ok(t, "GUARD_RELEASE=none"), c[1], "none")
		refused(t, "no commit nosuchrev", "GUARD_RELEASE=nosuchrev")
	})
	t.Run("GUARD_BASE alone: no release", func(t *testing.T) {
		r.pin(t, c[0]+"\n")
		want(t, ok(t, "GUARD_BASE="+c[0]), c[0], "none")
		want(t, ok(t, "GUARD_BASE="+c[2], "GUARD_RELEASE="+c[0]), c[2], c[0])
		refused(t, "no commit nosuchrev", "GUARD_BASE=nosuchrev")
	})
	t.Run("a tag v* is the release before the pin", func(t *testing.T) {
		r.pin(t, c[1]+"\n")
		r.git(t, "tag", "v0.1.0", c[0])
		r.git(t, "tag", "other", c[1])
		defer r.git(t, "tag", "-d", "v0.1.0", "other")
		out := ok(t)
		want(t, out, c[1], c[0])
		if !strings.Contains(out, "v0.1.0") {
			t.Errorf("the release does not name its tag:\n%s", out)
		}
	})
	t.Run("a branch: the merge-base with origin/main", func(t *testing.T) {
		r.pin(t, c[0]+"\n")
		r.git(t, "update-ref", "refs/remotes/origin/main", c[1])
		defer r.git(t, "update-ref", "-d", "refs/remotes/origin/main")
		r.git(t, "checkout", "-q", "-b", "topic", c[2])
		defer r.git(t, "checkout", "-q", "main")
		want(t, ok(t), c[1], c[0])
	})
}
