// Package transport is how a toolset reaches its servers below the go-sdk's
// client: stdio children launched in their own process group (Stdio, and
// StdioIdentity for collision suffixes), each connection with a Pipe that
// carries requests written as bytes beside the go-sdk's client (PipeOf,
// Tapped.Pipe), the client transports of remote
// servers (Remote, over an HTTP client bounded by Limited), a transport
// whose connection outlives its connect timeout (Detached), a notification
// tap that sees progress and log messages in wire order (Tapped), the
// bound on what a server may send (MaxAnswer, on every transport) and the
// guard that keeps a streamable HTTP server's bad answer to one call from
// taking the go-sdk client's session down (AnswerLimit, BadAnswer,
// IsBadAnswer), which errors mean a session is lost (SessionLost), and a
// context that carries none of a request's values into an upstream session
// (WithoutValues).
//
//	tr, err := transport.Stdio(cfg, nil, 2*time.Second, os.Stderr)
//	sess, err := client.Connect(ctx, &transport.Tapped{Inner: tr, Tap: route}, nil)
package transport
