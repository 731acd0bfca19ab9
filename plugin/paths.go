package plugin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// within reports whether the clean absolute path p is base or inside it.
// Both must be clean absolute paths (as EvalSymlinks returns them).
func within(base, p string) bool {
	if base == "" || p == "" {
		return false
	}
	if p == base {
		return true
	}
	prefix := base
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	return strings.HasPrefix(p, prefix)
}

// under joins rel onto base WITHOUT lexical cleaning, so that ".." after a
// symlink is resolved by EvalSymlinks the way the operating system would.
func under(base, rel string) string {
	if rel == "" {
		return base
	}
	return base + string(filepath.Separator) + filepath.FromSlash(rel)
}

// resolveAllowMissing resolves p like filepath.EvalSymlinks, except that a
// missing tail is allowed: existing components are resolved (symlinks
// followed, dangling ones too, as the OS would follow them on creation),
// and the missing components are appended lexically. exists says whether
// p itself resolved. Other errors (a loop, a permission error, a component
// that is not a directory) are returned.
func resolveAllowMissing(p string) (resolved string, exists bool, err error) {
	hops := 0
	return resolveMissing(p, &hops)
}

func resolveMissing(p string, hops *int) (string, bool, error) {
	r, err := filepath.EvalSymlinks(p)
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", false, err
	}
	parent, base := filepath.Dir(p), filepath.Base(p)
	if parent == p || base == string(filepath.Separator) {
		return "", false, err
	}
	rp, _, err := resolveMissing(parent, hops)
	if err != nil {
		return "", false, err
	}
	switch base {
	case ".":
		return rp, false, nil
	case "..":
		return filepath.Dir(rp), false, nil
	}
	cand := filepath.Join(rp, base)
	fi, lerr := os.Lstat(cand)
	if lerr != nil {
		if errors.Is(lerr, fs.ErrNotExist) || errors.Is(lerr, syscall.ENOTDIR) {
			return cand, false, nil
		}
		return "", false, lerr
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		return cand, true, nil
	}
	*hops++
	if *hops > 255 {
		return "", false, &fs.PathError{Op: "resolve", Path: p, Err: syscall.ELOOP}
	}
	target, err := os.Readlink(cand)
	if err != nil {
		return "", false, err
	}
	if !filepath.IsAbs(target) {
		target = rp + string(filepath.Separator) + target
	}
	r2, _, err := resolveMissing(target, hops)
	return r2, false, err
}

// describeResolveError turns an EvalSymlinks error on rel into a sentence.
func describeResolveError(rel string, err error) string {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s is a dangling symlink (its target does not exist)", rel)
	case errors.Is(err, syscall.ELOOP) || (errors.As(err, &pe) && strings.Contains(pe.Error(), "too many links")):
		return fmt.Sprintf("%s is a symlink loop", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Sprintf("%s passes through something that is not a directory", rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("%s cannot be resolved: permission denied", rel)
	default:
		return fmt.Sprintf("%s cannot be resolved: %v", rel, err)
	}
}

// errNotRegular is returned by readRegular for anything but a regular file.
var errNotRegular = errors.New("not a regular file")

// errTooLarge is returned by readRegular when the file exceeds the limit.
var errTooLarge = errors.New("file too large")

// readRegular opens path without blocking (a FIFO planted in a plugin must not
// hang the loader), verifies on the open handle that it is a regular file,
// and reads at most limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errNotRegular
	}
	if st.Size() > limit {
		return nil, errTooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// kindName describes a file mode for messages.
func kindName(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "not a regular file"
	}
}
