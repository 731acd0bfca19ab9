// Package fantasytest is a local stand-in for the chat model a fantasy
// agent talks to: an HTTP server on 127.0.0.1 speaking OpenAI's Chat
// Completions wire format (the format of fantasy's OpenAI and
// OpenAI-compatible providers), with answers scripted by turn.
//
//	srv := fantasytest.NewServer(
//		fantasytest.Reply{Calls: []fantasytest.Call{
//			{ID: "call_1", Name: "bank__charge", Args: `{"amount":5}`},
//			{ID: "call_2", Name: "bank__balance", Args: `{}`},
//		}},
//		fantasytest.Reply{Text: "Charged."},
//	)
//	defer srv.Close()
//	provider, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithAPIKey("test"))
//
// The server is internal/fixture/chatwire (the same Chat Completions
// server for every adapter that speaks this format): the answer is chosen
// from the request alone — the turn is the number of assistant messages
// already in the request's conversation — so an agent killed and restarted
// gets the same answers, and Requests counts what it asked. Malformed
// requests get the real API's 400 (illegal tool names, parameters that are
// not an object or have a top-level oneOf, anyOf, allOf, enum or not, tool
// messages that answer nothing, calls left
// unanswered); "stream": true gets chat.completion.chunk events (the text
// word by word, arguments in pieces, then [DONE]), and CutNext cuts the
// next stream mid-way.
package fantasytest

import "github.com/gatehouse-dev/gatehouse/internal/fixture/chatwire"

// Reply is the model's answer on one turn: text, calls (in parallel), or
// both.
type Reply = chatwire.Reply

// Call is one tool call of a scripted reply.
type Call = chatwire.Call

// Server is a running stand-in (see chatwire.Server).
type Server = chatwire.Server

// Request, Message, ToolCall, Function and Tool are the wire format as the
// server reads it, for tests that check what an agent sent.
type (
	Request  = chatwire.Request
	Message  = chatwire.Message
	ToolCall = chatwire.ToolCall
	Function = chatwire.Function
	Tool     = chatwire.Tool
)

// NewServer starts a server answering turn n with replies[n].
func NewServer(replies ...Reply) *Server { return chatwire.NewServer(replies...) }

// ParseRequest decodes a request body as the server does.
func ParseRequest(body []byte) (Request, error) { return chatwire.ParseRequest(body) }
