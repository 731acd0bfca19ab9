// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

// This file holds the table of MCP conformance tools. The fixtures (tools,
// resources, prompts) are adapted from the go-sdk's
// conformance/everything-server (v1.8.0): the handlers are unchanged; the
// tools are collected into a map for server.Options.Tools instead of being
// added to an mcp.Server. The handlers are in the files named after the
// protocol feature they exercise.

package main

import (
	"encoding/json"

	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addTool puts a go-sdk typed tool into the map served by the server.
func addTool[In, Out any](tools map[string]server.Tool, def *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) {
	tools[def.Name] = server.SDKTool(def, h)
}

// fixtureTools returns the conformance tools but the two that change the
// server's own lists (see registerListChangers).
func fixtureTools() map[string]server.Tool {
	tools := map[string]server.Tool{}

	addTool(tools, &mcp.Tool{
		Name:        "test_simple_text",
		Description: "Tests simple text content response",
	}, testSimpleTextHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_image_content",
		Description: "Tests image content response",
	}, testImageContentHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_audio_content",
		Description: "Tests audio content response",
	}, testAudioContentHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_embedded_resource",
		Description: "Tests embedded resource content response",
	}, testEmbeddedResourceHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_multiple_content_types",
		Description: "Tests response with multiple content types (text, image, resource)",
	}, testMultipleContentTypesHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_tool_with_logging",
		Description: "Tests tool that emits log messages during execution",
	}, testToolWithLoggingHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_tool_with_progress",
		Description: "Tests tool that reports progress notifications",
	}, testToolWithProgressHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_error_handling",
		Description: "Tests error response handling",
	}, testErrorHandlingHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_sampling",
		Description: "Tests server-initiated sampling (LLM completion request)",
	}, testSamplingHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_elicitation",
		Description: "Tests server-initiated elicitation (user input request)",
	}, testElicitationHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_elicitation_sep1034_defaults",
		Description: "Tests elicitation with default values per SEP-1034",
	}, testElicitationDefaultsHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_elicitation_sep1330_enums",
		Description: "Tests elicitation with enum schema improvements per SEP-1330",
	}, testElicitationEnumsHandler)

	// SEP-1613 / SEP-2106: JSON Schema 2020-12 conformance test tool.
	// The scenario verifies that $schema/$defs/additionalProperties (SEP-1613)
	// and the broader 2020-12 vocabulary — $anchor, allOf/anyOf, if/then/else —
	// (SEP-2106) survive tools/list verbatim.
	addTool(tools, &mcp.Tool{
		Name:        "json_schema_2020_12_tool",
		Description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613, SEP-2106)",
		InputSchema: json.RawMessage(`{
			"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object",
			"$defs": {
				"address": {
					"$anchor": "addressDef",
					"type": "object",
					"properties": {
						"street": { "type": "string" },
						"city": { "type": "string" }
					}
				}
			},
			"properties": {
				"name": { "type": "string" },
				"address": { "$ref": "#/$defs/address" },
				"contactMethod": { "type": "string", "enum": ["phone", "email"] },
				"phone": { "type": "string" },
				"email": { "type": "string" }
			},
			"allOf": [
				{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }
			],
			"if": {
				"properties": { "contactMethod": { "const": "phone" } },
				"required": ["contactMethod"]
			},
			"then": { "required": ["phone"] },
			"else": { "required": ["email"] },
			"additionalProperties": false
		}`),
	}, jsonSchema202012Handler)

	addTool(tools, &mcp.Tool{
		Name:        "test_reconnection",
		Description: "Tests SSE stream disconnection and client reconnection (SEP-1699). Server will close the stream mid-call and send the result after client reconnects.",
	}, testReconnectionHandler)

	// SEP-2243 x-mcp-header tool — arms the http-custom-header-server-validation
	// conformance scenario (which skips when no tool with an x-mcp-header
	// annotation is found).
	addTool(tools, &mcp.Tool{
		Name:        "test_x_mcp_header",
		Description: "Tests SEP-2243 Mcp-Param-* server-side validation",
		InputSchema: json.RawMessage(`{
			"type": "object",
			"properties": {
				"region": { "type": "string", "description": "mirrored into Mcp-Param-Region", "x-mcp-header": "Region" },
				"level": { "type": "integer", "description": "non-mirrored argument" }
			}
		}`),
	}, testXMcpHeaderHandler)

	// SEP-2575 diagnostic tools used by the stateless conformance scenario.
	addTool(tools, &mcp.Tool{
		Name:        "test_missing_capability",
		Description: "Requires the sampling client capability; used to verify MissingRequiredClientCapabilityError (-32021) (SEP-2575)",
	}, testMissingCapabilityHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_streaming_elicitation",
		Description: "Streams progress notifications while a call is in flight; used to verify response streams carry only notifications, never independent JSON-RPC requests (SEP-2575)",
	}, testStreamingElicitationHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_logging_tool",
		Description: "Attempts to emit a log message; the framework must drop it when the client did not set _meta.../logLevel (SEP-2575)",
	}, testLoggingToolHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_elicitation",
		Description: "MRTR (SEP-2322): asks for the caller name via an in-band elicitation request",
	}, testInputRequiredElicitationHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_sampling",
		Description: "MRTR (SEP-2322): asks for an LLM completion via an in-band sampling request",
	}, testInputRequiredSamplingHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_list_roots",
		Description: "MRTR (SEP-2322): asks for the client roots via an in-band roots/list request",
	}, testInputRequiredListRootsHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_request_state",
		Description: "MRTR (SEP-2322): round-trips integrity-protected requestState alongside an elicitation request",
	}, testInputRequiredRequestStateHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_multiple_inputs",
		Description: "MRTR (SEP-2322): asks for elicitation, sampling and roots input in a single round",
	}, testInputRequiredMultipleInputsHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_multi_round",
		Description: "MRTR (SEP-2322): two elicitation rounds with evolving requestState before completing",
	}, testInputRequiredMultiRoundHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_tampered_state",
		Description: "MRTR (SEP-2322): rejects retries whose requestState fails integrity verification",
	}, testInputRequiredTamperedStateHandler)

	addTool(tools, &mcp.Tool{
		Name:        "test_input_required_result_capabilities",
		Description: "MRTR (SEP-2322): only requests input kinds the declared client capabilities cover",
	}, testInputRequiredCapabilitiesHandler)
	return tools
}
