package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"strconv"
	"unicode/utf8"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// concernLines are the concerns of an observation's new text
// (pin.ChangeConcerns), each as pin.RenderConcern writes it. Changes that
// cannot be read are a concern too: what cannot be read cannot be checked.
func concernLines(changes []byte) []string {
	var cs []pin.Change
	if err := json.Unmarshal(changes, &cs); err != nil {
		return []string{"the changes cannot be read (the store row is damaged), so their text cannot be checked"}
	}
	var out []string
	for _, c := range cs {
		for _, k := range pin.ChangeConcerns(c) {
			out = append(out, pin.RenderConcern(c, k))
		}
	}
	return out
}

// confirmName is what an operator types to trust a flagged listing of sv:
// its configured name, or its row ID when it has none.
func confirmName(sv store.Server) string {
	if sv.Name != "" {
		return sv.Name
	}
	return sv.ID
}

// flagged reports whether the open observation of server id with listing
// fp has concerns (and so needs the server's name typed to be trusted),
// and the name to type. An observation that is not open, or a server that
// does not exist, needs nothing: the store refuses to trust it anyway.
func (c *console) flagged(ctx context.Context, id, fp string) (bool, string, error) {
	open, err := c.st.OpenObservations(ctx, id, false)
	if errors.Is(err, store.ErrNotFound) {
		return false, id, nil // no such server: the store's trust says so
	}
	if err != nil {
		return false, "", err
	}
	name := id
	if sv, err := c.st.GetServer(ctx, id); err == nil {
		name = confirmName(sv)
	}
	for _, o := range open {
		if o.Listing == fp && len(concernLines(o.Changes)) > 0 {
			return true, name, nil
		}
	}
	return false, name, nil
}

// toolNow is what the store says of an approval's tool now.
type toolNow struct {
	// Known: the tool was found in its server's stored listing.
	Known bool
	// Description is the tool's description as its server publishes it
	// now (the stored catalogue).
	Description string
	// Quarantined: an open observation records its contract changed after
	// it was trusted; every instance refuses its calls until the change
	// is trusted. Trusted is then the description trusted before.
	Quarantined bool
	Trusted     string
	// Withheld: a tool the server added after it was trusted.
	Withheld bool
}

// catalogueTool is the part of a stored catalogue's tool the console
// reads.
type catalogueTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// catalogueTools reads a server row's catalogue: the versioned object
// ({"format": ..., "tools": [...]}) or a bare array of tools (rows from
// before the format was versioned). Nil when it cannot be read.
func catalogueTools(b []byte) []catalogueTool {
	b = bytes.TrimSpace(b)
	var tools []catalogueTool
	if len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &tools) != nil {
			return nil
		}
		return tools
	}
	var c struct {
		Tools []catalogueTool `json:"tools"`
	}
	if json.Unmarshal(b, &c) != nil {
		return nil
	}
	return c.Tools
}

// toolIndex answers toolNow for the approvals of one page from one read
// of the servers and their open drift.
type toolIndex struct {
	rows []store.Server
	open map[string][]store.Observation // by server row ID
}

func (c *console) toolIndex(ctx context.Context) (*toolIndex, error) {
	rows, err := c.st.ListServers(ctx)
	if err != nil {
		return nil, err
	}
	open, err := c.st.OpenObservations(ctx, "", false)
	if err != nil {
		return nil, err
	}
	ix := &toolIndex{rows: rows, open: map[string][]store.Observation{}}
	for _, o := range open {
		ix.open[o.ServerID] = append(ix.open[o.ServerID], o)
	}
	return ix, nil
}

// of finds the tool an approval names (server: its configured name; tool:
// the name the caller called, the remote name under the server's prefix
// as the toolset projects it, or the remote name itself) among the stored
// listings of the rows with that name.
func (ix *toolIndex) of(server, tool string) toolNow {
	for _, row := range ix.rows {
		if row.Name != server {
			continue
		}
		for _, t := range catalogueTools(row.Catalogue) {
			if t.Name != tool && projectedName(server, t.Name) != tool {
				continue
			}
			now := toolNow{Known: true, Description: t.Description}
			ix.drift(row.ID, t.Name, &now)
			return now
		}
	}
	return toolNow{}
}

// drift fills now's quarantine from the open observations of row id.
func (ix *toolIndex) drift(id, remote string, now *toolNow) {
	for _, o := range ix.open[id] {
		if !o.Drifted {
			continue
		}
		var cs []pin.Change
		if json.Unmarshal(o.Changes, &cs) != nil {
			continue
		}
		for _, ch := range cs {
			if ch.Kind != pin.ChangeTool || ch.Name != remote {
				continue
			}
			switch ch.Change {
			case pin.ChangeChanged:
				now.Quarantined = true
				var before struct {
					Description string `json:"description"`
				}
				if json.Unmarshal(ch.Before, &before) == nil {
					now.Trusted = before.Description
				}
			case pin.ChangeAdded:
				now.Withheld = true
			}
		}
	}
}

// projectedName is the name the toolset projects remote tool tool of a
// server with prefix under: the rule of internal/projection.Name, which
// the console may not import (prefix + "__" + tool when that matches
// ^[a-zA-Z0-9_-]{1,64}$; else every other character, per rune, as "_", cut
// to leave room for "_" and the base-36 FNV-1a-32 of the full name).
// TestProjectedNameAsProjection holds it to that function.
func projectedName(prefix, tool string) string {
	full := tool
	if prefix != "" {
		full = prefix + "__" + tool
	}
	legal := func(c byte) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	ok := len(full) > 0 && len(full) <= 64
	for i := 0; ok && i < len(full); i++ {
		ok = legal(full[i])
	}
	if ok {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	suffix := "_" + strconv.FormatUint(uint64(h.Sum32()), 36)
	maxHead := 64 - len(suffix)
	head := make([]byte, 0, 64)
	for i := 0; i < len(full) && len(head) < maxHead; {
		if legal(full[i]) {
			head = append(head, full[i])
			i++
			continue
		}
		_, size := utf8.DecodeRuneInString(full[i:])
		head = append(head, '_')
		i += size
	}
	return string(head) + suffix
}
