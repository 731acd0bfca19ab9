package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

// ToolDef is the definition of a tool a model is handed: its name, its
// description and its input schema (a JSON Schema object).
type ToolDef struct {
	Name        string
	Description string
	InputSchema json.RawMessage
}

// ToolResult is the answer of Call for the model: its text, and whether it
// is an error the model made or met (an unknown skill, a file too large).
type ToolResult struct {
	Text    string
	IsError bool
}

// ErrUnknownTool is returned by Call for a name other than ReadToolName and
// ReadFileToolName.
var ErrUnknownTool = errors.New("skills: unknown tool")

const readSchema = `{"type":"object","properties":{"skill":{"type":"string","description":"The skill to read, as PLUGIN/NAME from the skills index."}},"required":["skill"],"additionalProperties":false}`

const readFileSchema = `{"type":"object","properties":{"skill":{"type":"string","description":"The skill, as PLUGIN/NAME from the skills index."},"path":{"type":"string","description":"A path from the skill's list of files, e.g. references/guide.md."}},"required":["skill","path"],"additionalProperties":false}`

// Tools returns the definitions of the two tools a model reads skills with:
// ReadToolName ({"skill": "PLUGIN/NAME"}: the skill's body and the list of
// its files) and ReadFileToolName ({"skill": "PLUGIN/NAME", "path": P}: one
// of those files). Call answers them. Package durable/loop hands them to
// its model when Options.Skills is set; an agent on package toolset without
// the loop hands them to its model itself and routes their calls to Call.
func (c *Catalog) Tools() []ToolDef {
	return []ToolDef{
		{
			Name: ReadToolName,
			Description: "Read a skill from the skills index: its instructions and the list of its files. " +
				"Read a skill before doing a task it describes.",
			InputSchema: json.RawMessage(readSchema),
		},
		{
			Name:        ReadFileToolName,
			Description: "Read one file of a skill (a path from the list " + ReadToolName + " returns), e.g. a reference document.",
			InputSchema: json.RawMessage(readFileSchema),
		},
	}
}

// toolArgs are the arguments of the two tools.
type toolArgs struct {
	Skill string  `json:"skill"`
	Path  *string `json:"path"`
}

// parseToolArgs reads a tool's arguments strictly: one JSON object with a
// string "skill" of the form PLUGIN/NAME and, when withPath, a string
// "path"; no other member, no member twice, nothing after the object.
func parseToolArgs(args json.RawMessage, withPath bool) (pluginName, name, path string, err error) {
	var a toolArgs
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if len(bytes.TrimSpace(args)) == 0 || bytes.TrimSpace(args)[0] != '{' {
		return "", "", "", errors.New("the arguments must be a JSON object")
	}
	seen := map[string]bool{}
	dup := ""
	jsonscan.Object(args, func(key []byte, escaped bool, _ []byte) bool {
		k := string(key)
		if escaped {
			if json.Unmarshal([]byte(`"`+k+`"`), &k) != nil {
				return true // the decoder below reports it
			}
		}
		if seen[k] {
			dup = k
			return false
		}
		seen[k] = true
		return true
	})
	if dup != "" {
		return "", "", "", fmt.Errorf("the arguments have %q more than once", clip(dup))
	}
	if err := dec.Decode(&a); err != nil {
		return "", "", "", fmt.Errorf("the arguments are not valid: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "", "", errors.New("the arguments must be one JSON object, with nothing after it")
	}
	if a.Skill == "" {
		return "", "", "", errors.New(`"skill" is required: PLUGIN/NAME from the skills index`)
	}
	pluginName, name, ok := strings.Cut(a.Skill, "/")
	if !ok || pluginName == "" || name == "" {
		return "", "", "", fmt.Errorf(`"skill" must be PLUGIN/NAME from the skills index, not %q`, clip(a.Skill))
	}
	if withPath {
		if a.Path == nil || *a.Path == "" {
			return "", "", "", errors.New(`"path" is required: a path from the skill's list of files`)
		}
		path = *a.Path
	} else if a.Path != nil {
		return "", "", "", fmt.Errorf(`%s takes only "skill"; use %s to read a file`, ReadToolName, ReadFileToolName)
	}
	return pluginName, name, path, nil
}

// Call answers a call of one of the tools of Tools: ReadToolName returns
// the skill's body and its list of files, ReadFileToolName one file's text
// (a binary file is described, not shown). Everything the model can get
// wrong or meet (bad arguments, an unknown skill or file, a file too large,
// escaping its directory or changed on disk) is a ToolResult with IsError
// and a sentence that names no path outside the skill. The error is
// ErrUnknownTool for another tool name, or the context's error.
func (c *Catalog) Call(ctx context.Context, tool string, args json.RawMessage) (ToolResult, error) {
	if err := ctx.Err(); err != nil {
		return ToolResult{}, err
	}
	switch tool {
	case ReadToolName:
		p, n, _, err := parseToolArgs(args, false)
		if err != nil {
			return toolError(ReadToolName, err.Error()), nil
		}
		return c.callRead(ctx, p, n)
	case ReadFileToolName:
		p, n, path, err := parseToolArgs(args, true)
		if err != nil {
			return toolError(ReadFileToolName, err.Error()), nil
		}
		return c.callReadFile(ctx, p, n, path)
	}
	return ToolResult{}, fmt.Errorf("%w %q", ErrUnknownTool, tool)
}

func toolError(tool, msg string) ToolResult {
	return ToolResult{Text: tool + ": " + msg, IsError: true}
}

func (c *Catalog) callRead(ctx context.Context, pluginName, name string) (ToolResult, error) {
	s, ok := c.Lookup(pluginName, name)
	if !ok {
		return toolError(ReadToolName, fmt.Sprintf("there is no skill %q; the skills index lists the skills", clip(pluginName+"/"+name))), nil
	}
	body, err := c.Body(ctx, pluginName, name)
	if err != nil {
		if ctx.Err() != nil {
			return ToolResult{}, ctx.Err()
		}
		return toolError(ReadToolName, refusal(s.ID(), BodyPath, err, c.opts.MaxFileBytes, true)), nil
	}
	var b strings.Builder
	b.WriteString("# Skill ")
	b.WriteString(s.ID())
	b.WriteString("\n\n")
	b.WriteString(strings.TrimSpace(body))
	b.WriteString("\n")
	if len(s.Files) > 0 {
		b.WriteString("\n## Files of this skill\n\nRead one with ")
		b.WriteString(ReadFileToolName)
		b.WriteString(` {"skill": "` + s.ID() + `", "path": "<path>"}. Scripts are listed for reading; Gatehouse never runs them.` + "\n\n")
		for _, f := range s.Files {
			b.WriteString("- ")
			b.WriteString(f.Path)
			b.WriteString(" (")
			b.WriteString(f.Kind)
			b.WriteString(", ")
			b.WriteString(strconv.FormatInt(f.Size, 10))
			b.WriteString(" bytes")
			if f.SHA256 == "" {
				b.WriteString(", too large to read")
			}
			b.WriteString(")\n")
		}
	}
	return ToolResult{Text: b.String()}, nil
}

func (c *Catalog) callReadFile(ctx context.Context, pluginName, name, path string) (ToolResult, error) {
	s, ok := c.Lookup(pluginName, name)
	if !ok {
		return toolError(ReadFileToolName, fmt.Sprintf("there is no skill %q; the skills index lists the skills", clip(pluginName+"/"+name))), nil
	}
	content, err := c.ReadFile(ctx, pluginName, name, path)
	if err != nil {
		if ctx.Err() != nil {
			return ToolResult{}, ctx.Err()
		}
		return toolError(ReadFileToolName, refusal(s.ID(), path, err, c.opts.MaxFileBytes, false)), nil
	}
	if content.Blob != nil {
		return ToolResult{Text: fmt.Sprintf("%s is a binary file (%s, %d bytes); its content is not shown as text.", path, content.MIMEType, len(content.Blob))}, nil
	}
	return ToolResult{Text: content.Text}, nil
}

// refusal words a read error for the model: by its class, never with the
// error's own text (which may name paths outside the skill).
func refusal(id, path string, err error, max int64, body bool) string {
	p := strconv.Quote(clip(path))
	switch {
	case errors.Is(err, ErrNotFound) && !body:
		return fmt.Sprintf("skill %s has no file %s; %s lists its files", id, p, ReadToolName)
	case errors.Is(err, ErrTooLarge):
		return fmt.Sprintf("%s of skill %s is larger than the %d bytes served", p, id, max)
	case errors.Is(err, ErrEscapes):
		return fmt.Sprintf("%s of skill %s is not served: it no longer resolves to a regular file inside the skill", p, id)
	case errors.Is(err, ErrChanged):
		return fmt.Sprintf("%s of skill %s changed on disk since the skills were loaded; it is not served until they are loaded again", p, id)
	}
	return fmt.Sprintf("%s of skill %s cannot be read", p, id)
}
