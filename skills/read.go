package skills

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/projection"
)

// Content is what ReadFile returns: text (valid UTF-8 without NUL bytes,
// sanitized) in Text, or anything else in Blob, unchanged; MIMEType is set
// either way.
type Content struct {
	Text     string
	Blob     []byte
	MIMEType string
}

// Body returns the body of the skill's SKILL.md (the markdown after its
// front matter), sanitized like a tool description. It reads the file again:
// SKILL.md must still resolve inside the plugin root and be a regular file
// (a symlink swapped in after New is refused with ErrEscapes), be at most
// Options.MaxFileBytes (ErrTooLarge) and be byte for byte what New hashed
// (ErrChanged). An unknown skill is ErrNotFound.
func (c *Catalog) Body(ctx context.Context, plugin, name string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	e := c.lookup(plugin, name)
	if e == nil {
		return "", fmt.Errorf("%w: no skill %s/%s", ErrNotFound, plugin, name)
	}
	data, err := readContained(e.root, e.mdRel, c.opts.MaxFileBytes)
	if err != nil {
		return "", fmt.Errorf("skill %s/%s: SKILL.md: %w", plugin, name, err)
	}
	if sha256Hex(data) != e.skillSHA {
		return "", fmt.Errorf("skill %s/%s: SKILL.md: %w", plugin, name, ErrChanged)
	}
	body, ok := splitBody(data)
	if !ok {
		// Unreachable: New split this very content (the hash matched).
		return "", fmt.Errorf("skill %s/%s: SKILL.md: %w", plugin, name, ErrChanged)
	}
	return projection.Sanitize(string(body)), nil
}

// splitBody returns what follows SKILL.md's front matter: the file starts
// with a line "---" and the front matter ends at the next line "---" (a
// trailing CR on either is accepted), as plugin.Load reads it.
func splitBody(data []byte) ([]byte, bool) {
	line, rest, ok := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimSuffix(line, []byte("\r"))) != "---" || !ok {
		return nil, false
	}
	for len(rest) > 0 {
		l, more, found := bytes.Cut(rest, []byte("\n"))
		if string(bytes.TrimSuffix(l, []byte("\r"))) == "---" {
			return more, true
		}
		if !found {
			break
		}
		rest = more
	}
	return nil, false
}

// ReadFile returns one of the skill's listed files (a path of Skill.Files;
// anything else is ErrNotFound). It reads the file again: it must still
// resolve inside the skill directory and be a regular file (a file swapped
// for a symlink out of the directory after New is refused with ErrEscapes),
// be at most Options.MaxFileBytes (ErrTooLarge; a larger file is never read)
// and be byte for byte what New hashed (ErrChanged). Text is sanitized like
// a tool description. Scripts are read as text like any other file; nothing
// here runs them.
func (c *Catalog) ReadFile(ctx context.Context, plugin, name, file string) (Content, error) {
	if err := ctx.Err(); err != nil {
		return Content{}, err
	}
	e := c.lookup(plugin, name)
	if e == nil {
		return Content{}, fmt.Errorf("%w: no skill %s/%s", ErrNotFound, plugin, name)
	}
	f, ok := e.files[file]
	if !ok {
		return Content{}, fmt.Errorf("%w: skill %s/%s has no file %q", ErrNotFound, plugin, name, file)
	}
	if f.SHA256 == "" {
		return Content{}, fmt.Errorf("skill %s/%s: %s is %d bytes, the limit is %d: %w", plugin, name, file, f.Size, c.opts.MaxFileBytes, ErrTooLarge)
	}
	data, err := readContained(e.dir, file, c.opts.MaxFileBytes)
	if err != nil {
		return Content{}, fmt.Errorf("skill %s/%s: %w", plugin, name, err)
	}
	if sha256Hex(data) != f.SHA256 {
		return Content{}, fmt.Errorf("skill %s/%s: %s: %w", plugin, name, file, ErrChanged)
	}
	if isText(data) {
		return Content{Text: projection.Sanitize(string(data)), MIMEType: mimeType(file, data, true)}, nil
	}
	return Content{Blob: data, MIMEType: mimeType(file, data, false)}, nil
}

// isText reports whether data is served as text: valid UTF-8 without NUL.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// mimeType names a file's type: by extension (byExtension), else
// text/plain for text, else what http.DetectContentType says.
func mimeType(file string, data []byte, text bool) string {
	if t := byExtension(strings.ToLower(path.Ext(file))); t != "" {
		return t
	}
	if text {
		return "text/plain"
	}
	return http.DetectContentType(data)
}

// byExtension names the types a skill's files commonly have. The table is
// ours, not the system's (mime.TypeByExtension reads files under /etc that
// differ from machine to machine).
func byExtension(ext string) string {
	switch ext {
	case ".md", ".markdown":
		return "text/markdown"
	case ".txt":
		return "text/plain"
	case ".json":
		return "application/json"
	case ".yaml", ".yml":
		return "application/yaml"
	case ".csv":
		return "text/csv"
	case ".html", ".htm":
		return "text/html"
	case ".xml":
		return "application/xml"
	case ".py":
		return "text/x-python"
	case ".sh":
		return "text/x-shellscript"
	case ".js":
		return "text/javascript"
	case ".png":
		return "image/png"
	case ".jpg", ".jpeg":
		return "image/jpeg"
	case ".gif":
		return "image/gif"
	case ".svg":
		return "image/svg+xml"
	case ".webp":
		return "image/webp"
	case ".pdf":
		return "application/pdf"
	}
	return ""
}
