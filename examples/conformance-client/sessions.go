package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// session opens the toolset and a session of the caller's own to its one
// server through Upstream.Connect (the toolset's transport, egress guard
// and OAuth handler), with a client made from opts.
func session(ctx context.Context, serverURL string, opts *mcp.ClientOptions) (*mcp.ClientSession, func(), error) {
	ts, err := open(ctx, serverURL, nil)
	if err != nil {
		return nil, nil, err
	}
	ups, err := ts.Upstreams(ctx)
	if err != nil || len(ups) != 1 {
		ts.Close()
		return nil, nil, fmt.Errorf("upstreams: %v %v (diagnostics %v)", ups, err, ts.Diagnostics())
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-conformance-client", Version: "1.0.0"}, opts)
	s, err := ups[0].Connect(ctx, c, nil)
	if err != nil {
		ts.Close()
		return nil, nil, err
	}
	return s, func() { s.Close(); ts.Close() }, nil
}

func acceptElicitation(content map[string]any) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: content}, nil
	}
}

func runElicitationDefaults(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, &mcp.ClientOptions{ElicitationHandler: acceptElicitation(map[string]any{})})
	if err != nil {
		return err
	}
	defer done()
	return listAndCall(ctx, s, "test_client_elicitation_defaults", map[string]any{})
}

func listAndCall(ctx context.Context, s *mcp.ClientSession, name string, args map[string]any) error {
	list, err := s.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	if !slices.ContainsFunc(list.Tools, func(t *mcp.Tool) bool { return t.Name == name }) {
		return fmt.Errorf("tool %q not found", name)
	}
	if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil {
		return fmt.Errorf("call %q: %w", name, err)
	}
	return nil
}

func runListRaw(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer done()
	_, _ = s.ListTools(ctx, nil)
	return nil
}

// runSchemaPreservation echoes the focal tool's schema as the server sent
// it (the raw listing: the tool map's schemas are sanitized for a model).
func runSchemaPreservation(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer done()
	list, err := s.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	i := slices.IndexFunc(list.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
	if i < 0 {
		return errors.New(`tool "json_schema_2020_12_tool" not found`)
	}
	_, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "json_schema_echo", Arguments: map[string]any{"schema": list.Tools[i].InputSchema}})
	return err
}

func runMRTR(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, &mcp.ClientOptions{
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}},
		ElicitationHandler: acceptElicitation(map[string]any{"confirmed": true}),
	})
	if err != nil {
		return err
	}
	defer done()
	for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{}}); err != nil {
			log.Printf("call %q refused locally (expected for some): %v", name, err)
		}
	}
	return nil
}

func runStandardHeaders(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer done()
	if list, err := s.ListTools(ctx, nil); err == nil && len(list.Tools) > 0 {
		_, _ = s.CallTool(ctx, &mcp.CallToolParams{Name: list.Tools[0].Name, Arguments: map[string]any{}})
	}
	if res, err := s.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		_, _ = s.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
	}
	if ps, err := s.ListPrompts(ctx, nil); err == nil && len(ps.Prompts) > 0 {
		_, _ = s.GetPrompt(ctx, &mcp.GetPromptParams{Name: ps.Prompts[0].Name, Arguments: map[string]string{}})
	}
	return nil
}

func runCustomHeaders(ctx context.Context, serverURL string, cc map[string]any) error {
	s, done, err := session(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer done()
	if _, err := s.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	calls, _ := cc["toolCalls"].([]any)
	for _, item := range calls {
		obj, _ := item.(map[string]any)
		name, _ := obj["name"].(string)
		args, _ := obj["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args}); err != nil {
			log.Printf("call %q: %v", name, err)
		}
	}
	return nil
}

func runInvalidToolHeaders(ctx context.Context, serverURL string, _ map[string]any) error {
	s, done, err := session(ctx, serverURL, nil)
	if err != nil {
		return err
	}
	defer done()
	list, err := s.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range list.Tools {
		if _, err := s.CallTool(ctx, &mcp.CallToolParams{Name: t.Name, Arguments: map[string]any{"region": "us-west1"}}); err != nil {
			log.Printf("call %q refused: %v", t.Name, err)
		}
	}
	return nil
}
