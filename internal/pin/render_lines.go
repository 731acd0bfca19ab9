package pin

import "strconv"

// diffContext is how many unchanged lines lineDiff shows around a change.
const diffContext = 3

// maxDiffCells bounds the table of lineDiff's longest common subsequence;
// beyond it the differing middle is shown as all removed, then all added.
const maxDiffCells = 1 << 20

type lineOp struct {
	op   byte // ' ', '-' or '+'
	text string
}

// lineDiff returns the lines of a diff from a to b: "- " a line only in a,
// "+ " one only in b, "  " an unchanged one near a change, and
// "(N unchanged lines)" for the unchanged ones further away. Every line's
// text goes through Visible.
func lineDiff(a, b []string) []string {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ops := make([]lineOp, 0, len(a)+len(b))
	for _, l := range a[:pre] {
		ops = append(ops, lineOp{' ', l})
	}
	ops = append(ops, middleDiff(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		ops = append(ops, lineOp{' ', l})
	}
	return withContext(ops)
}

// middleDiff diffs two runs of lines by their longest common subsequence.
func middleDiff(a, b []string) []lineOp {
	n, m := len(a), len(b)
	if n == 0 || m == 0 || n*m > maxDiffCells {
		ops := make([]lineOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, lineOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, lineOp{'+', l})
		}
		return ops
	}
	// lcs[i*(m+1)+j] is the LCS length of a[i:] and b[j:].
	lcs := make([]int32, (n+1)*(m+1))
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*(m+1)+j] = lcs[(i+1)*(m+1)+j+1] + 1
			} else {
				lcs[i*(m+1)+j] = max(lcs[(i+1)*(m+1)+j], lcs[i*(m+1)+j+1])
			}
		}
	}
	ops := make([]lineOp, 0, n+m)
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, lineOp{' ', a[i]})
			i++
			j++
		case lcs[(i+1)*(m+1)+j] >= lcs[i*(m+1)+j+1]:
			ops = append(ops, lineOp{'-', a[i]})
			i++
		default:
			ops = append(ops, lineOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, lineOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, lineOp{'+', b[j]})
	}
	return ops
}

// withContext renders ops, eliding unchanged lines further than
// diffContext from any change.
func withContext(ops []lineOp) []string {
	near := make([]bool, len(ops))
	for i, o := range ops {
		if o.op == ' ' {
			continue
		}
		for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
			near[j] = true
		}
	}
	var out []string
	for i := 0; i < len(ops); {
		if ops[i].op == ' ' && !near[i] {
			j := i
			for j < len(ops) && ops[j].op == ' ' && !near[j] {
				j++
			}
			if j-i == 1 {
				out = append(out, "  "+Visible(ops[i].text))
			} else {
				out = append(out, "("+strconv.Itoa(j-i)+" unchanged lines)")
			}
			i = j
			continue
		}
		out = append(out, string(ops[i].op)+" "+Visible(ops[i].text))
		i++
	}
	return out
}
