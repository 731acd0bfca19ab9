package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatehouse-dev/gatehouse/policy"
	"github.com/gatehouse-dev/gatehouse/refusal"
)

var ctx = context.Background()

// recorder is a guard that records that it was asked and answers d, err.
type recorder struct {
	asked int
	d     policy.Decision
	err   error
}

func (r *recorder) Check(context.Context, policy.Call) (policy.Decision, error) {
	r.asked++
	return r.d, r.err
}

func TestComposeAllAllow(t *testing.T) {
	a, b := &recorder{d: policy.Allowed()}, &recorder{d: policy.Allowed()}
	d, err := policy.Compose(a, b).Check(ctx, policy.Call{Tool: "x"})
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("got %+v, %v; want allow", d, err)
	}
	if a.asked != 1 || b.asked != 1 {
		t.Fatalf("asked %d, %d; want 1, 1", a.asked, b.asked)
	}
}

func TestComposeShortCircuits(t *testing.T) {
	for _, first := range []policy.Decision{
		policy.Denied("call_limit", "too many"),
		policy.NeedsApproval("check it"),
	} {
		t.Run(string(first.Verdict), func(t *testing.T) {
			allow := &recorder{d: policy.Allowed()}
			stop := &recorder{d: first}
			after := &recorder{d: policy.Denied("", "later")}
			d, err := policy.Compose(allow, stop, after).Check(ctx, policy.Call{Tool: "x"})
			if err != nil {
				t.Fatal(err)
			}
			if d != first {
				t.Fatalf("got %+v, want %+v", d, first)
			}
			if after.asked != 0 {
				t.Fatalf("guard after a %s was asked", first.Verdict)
			}
		})
	}
}

func TestComposeOrderMatters(t *testing.T) {
	deny := &recorder{d: policy.Denied("", "no")}
	approve := &recorder{d: policy.NeedsApproval("ask")}
	d, _ := policy.Compose(approve, deny).Check(ctx, policy.Call{})
	if d.Verdict != policy.RequireApproval {
		t.Fatalf("approval first: got %v", d.Verdict)
	}
	d, _ = policy.Compose(deny, approve).Check(ctx, policy.Call{})
	if d.Verdict != policy.Deny {
		t.Fatalf("deny first: got %v", d.Verdict)
	}
}

func TestComposeErrorFailsClosed(t *testing.T) {
	boom := errors.New("counter store down")
	bad := &recorder{d: policy.Allowed(), err: boom} // says allow, but errs
	after := &recorder{d: policy.Allowed()}
	d, err := policy.Compose(bad, after).Check(ctx, policy.Call{Tool: "x"})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if d.Verdict != policy.Deny || d.Code != refusal.Denied {
		t.Fatalf("decision with error = %+v, want deny/denied", d)
	}
	if after.asked != 0 {
		t.Fatal("guard after an error was asked")
	}
}

func TestComposeInvalidVerdictFailsClosed(t *testing.T) {
	for _, v := range []policy.Verdict{"", "ALLOW", "maybe"} {
		g := &recorder{d: policy.Decision{Verdict: v}}
		d, err := policy.Compose(g).Check(ctx, policy.Call{Tool: "x"})
		if !errors.Is(err, policy.ErrInvalidDecision) {
			t.Fatalf("verdict %q: err = %v", v, err)
		}
		if d.Verdict != policy.Deny {
			t.Fatalf("verdict %q: got %v, want deny", v, d.Verdict)
		}
	}
}

func TestComposeNilAndEmpty(t *testing.T) {
	d, err := policy.Compose().Check(ctx, policy.Call{})
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("empty Compose: %+v, %v", d, err)
	}
	deny := &recorder{d: policy.Denied("", "no")}
	d, _ = policy.Compose(nil, deny, nil).Check(ctx, policy.Call{})
	if d.Verdict != policy.Deny {
		t.Fatalf("nil entries: got %v", d.Verdict)
	}
}

func TestComposeCancelledContext(t *testing.T) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	g := &recorder{d: policy.Allowed()}
	d, err := policy.Compose(g).Check(c, policy.Call{})
	if !errors.Is(err, context.Canceled) || d.Verdict != policy.Deny || g.asked != 0 {
		t.Fatalf("cancelled: %+v, %v, asked %d", d, err, g.asked)
	}
}

func TestEvaluate(t *testing.T) {
	d, err := policy.Evaluate(ctx, nil, policy.Call{})
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("nil guard: %+v %v", d, err)
	}
	d, err = policy.Evaluate(ctx, policy.GuardFunc(func(context.Context, policy.Call) (policy.Decision, error) {
		return policy.Decision{Verdict: policy.Deny, Reason: "r"}, nil
	}), policy.Call{})
	if err != nil || d.Code != refusal.Denied || d.Reason != "r" {
		t.Fatalf("deny without code: %+v %v", d, err)
	}
	if policy.Denied("", "x").Code != refusal.Denied {
		t.Fatal("Denied with empty code")
	}
}

func TestReadOnly(t *testing.T) {
	g := policy.ReadOnly("bank__balance", "bank__history")
	for _, tool := range []string{"bank__balance", "bank__history"} {
		d, err := g.Check(ctx, policy.Call{Tool: tool})
		if err != nil || d.Verdict != policy.Allow {
			t.Fatalf("%s: %+v %v", tool, d, err)
		}
	}
	for _, c := range []policy.Call{
		{Tool: "bank__transfer"},
		{Tool: "BANK__BALANCE"},                              // case matters
		{Tool: "evil__balance", RemoteName: "bank__balance"}, // a remote name never matches
		{Tool: ""},
	} {
		d, err := g.Check(ctx, c)
		if err != nil || d.Verdict != policy.Deny || d.Code != refusal.Denied {
			t.Fatalf("%+v: %+v %v", c, d, err)
		}
		if !strings.Contains(d.Reason, `"`+c.Tool+`"`) {
			t.Fatalf("reason %q does not name %q", d.Reason, c.Tool)
		}
	}
	d, _ := policy.ReadOnly().Check(ctx, policy.Call{Tool: "x"})
	if d.Verdict != policy.Deny {
		t.Fatal("ReadOnly() allowed a call")
	}
}

func TestAllowAll(t *testing.T) {
	var p policy.Guard = policy.AllowAll()
	d, err := p.Check(ctx, policy.Call{Tool: "anything"})
	if err != nil || d.Verdict != policy.Allow {
		t.Fatalf("%+v %v", d, err)
	}
}
