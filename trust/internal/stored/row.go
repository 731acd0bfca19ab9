package stored

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/internal/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/store"
)

// configIDPrefix starts the row ID of a server configured without a
// plugin. It contains ':', which no plugin name may (Agent Plugins §5.5),
// so it never collides with the ID of a plugin's server.
const configIDPrefix = "config:"

// RowID is the row ID of a server by its configuration: "<plugin
// name>/<server name>" for a plugin's server, "config:<server name>" for
// a server configured without a plugin.
func RowID(cfg plugin.ServerConfig) string {
	if cfg.PluginName != "" {
		return cfg.PluginName + "/" + cfg.Name
	}
	return configIDPrefix + cfg.Name
}

// InternalType is the transport type kept in the row of a server reached
// through a transport function of the caller's (a toolset's
// Server.Transport) whose configuration names no type.
const InternalType = "internal"

// Row is the row kept for a server: its id and name, its transport type
// (InternalType when internal is set and cfg names none), RowURL, and the
// catalogue (EncodeCatalogue). A row holds no token, header, auth output
// or environment.
func Row(id, name string, cfg plugin.ServerConfig, internal bool, catalogue []byte) store.Server {
	row := store.Server{ID: id, Name: name, Type: string(cfg.Type), URL: RowURL(cfg), Catalogue: catalogue}
	if internal && row.Type == "" {
		row.Type = InternalType
	}
	return row
}

// RowURL is the URL kept in a server row: the configured URL without
// userinfo, query or fragment, which can carry credentials. Stdio servers
// keep "".
func RowURL(cfg plugin.ServerConfig) string {
	if cfg.Type == plugin.TransportStdio || cfg.URL == "" {
		return ""
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// IdentityHash is 8 hex digits of the SHA-256 of a server's identity (its
// URL, or its resolved command and args): what tells apart two servers
// given one row ID.
func IdentityHash(identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return hex.EncodeToString(sum[:4])
}

// InstructionsPrint fingerprints the instructions of an initialize result
// (pin.InstructionsFingerprint; a nil result has none).
func InstructionsPrint(res *mcp.InitializeResult) string {
	var s string
	if res != nil {
		s = res.Instructions
	}
	return pin.InstructionsFingerprint(s)
}
