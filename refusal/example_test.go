package refusal_test

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/refusal"
)

// A refusal as the tool result a model or an MCP client receives
// (docs/reference/refusals.md).
func ExampleError_Result() {
	e := &refusal.Error{Code: refusal.ApprovalRequired, Retryable: true, ApprovalID: "apr_2f1c0e9b8a7d6c5e",
		Message: "the call to bank__transfer needs an operator's approval"}
	r := e.Result()
	fmt.Println(r.IsError)
	fmt.Println(r.Content[0].(*mcp.TextContent).Text)
	fmt.Println(r.StructuredContent)
	// Output:
	// true
	// [approval_required] the call to bank__transfer needs an operator's approval
	// map[approvalId:apr_2f1c0e9b8a7d6c5e code:approval_required retryable:true]
}

// Callers branch on a refusal's code, found anywhere in an error chain,
// never on its text.
func ExampleAs() {
	cause := errors.New("connection reset by peer")
	err := fmt.Errorf("charging order 42: %w", &refusal.Error{Code: refusal.InDoubt,
		Message: "call run-1:call-2 may have been sent and its outcome is unknown", Err: cause})

	if r, ok := refusal.As(err); ok {
		fmt.Println(r.Code, "retryable:", r.Retryable)
		fmt.Println(r.Text()) // what the caller sees: the cause stays out
	}
	fmt.Println(errors.Is(err, &refusal.Error{Code: refusal.InDoubt}), errors.Is(err, cause))

	_, ok := refusal.As(cause)
	fmt.Println("a plain error is a refusal:", ok)
	// Output:
	// in_doubt retryable: false
	// [in_doubt] call run-1:call-2 may have been sent and its outcome is unknown
	// true true
	// a plain error is a refusal: false
}
