package pin

import "testing"

func TestSummarize(t *testing.T) {
	for _, c := range []struct {
		cs   []Change
		want string
	}{
		{nil, "none"},
		{[]Change{{Change: ChangeAdded}}, "1 added"},
		{[]Change{{Change: ChangeRemoved}, {Change: ChangeChanged}, {Change: ChangeAdded}, {Change: ChangeChanged}}, "2 changed, 1 added, 1 removed"},
		{[]Change{{Change: "renamed"}, {Change: ChangeAdded}, {Change: "?"}}, "1 added, 2 other"},
	} {
		if got := Summarize(c.cs); got != c.want {
			t.Errorf("Summarize(%v) = %q, want %q", c.cs, got, c.want)
		}
	}
}
