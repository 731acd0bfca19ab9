// Package transport is how a toolset reaches its servers below the go-sdk's
// client: stdio children launched in their own process group (Stdio, and
// StdioIdentity for collision suffixes), a transport whose connection
// outlives its connect timeout (Detached), a notification tap that sees
// progress and log messages in wire order (Tapped), and the bound on what a
// streamable HTTP server may send (AnswerLimit, MaxAnswer).
//
//	tr, err := transport.Stdio(cfg, nil, 2*time.Second, os.Stderr)
//	sess, err := client.Connect(ctx, &transport.Tapped{Inner: tr, Tap: route}, nil)
package transport
