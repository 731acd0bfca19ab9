package projection

import (
	"hash/fnv"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var legalRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// refName is an independent rendering of the naming rule in the package
// doc: regexp for legality and replacement, strings for the cut.
func refName(prefix, tool string) string {
	full := tool
	if prefix != "" {
		full = prefix + "__" + tool
	}
	if legalRE.MatchString(full) {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(full))
	suffix := "_" + strconv.FormatUint(uint64(h.Sum32()), 36)
	var head strings.Builder
	for _, r := range full { // per rune; invalid bytes are each U+FFFD
		if r < 128 && legalRE.MatchString(string(r)) {
			head.WriteRune(r)
		} else {
			head.WriteByte('_')
		}
	}
	hs := head.String()
	if len(hs) > 64-len(suffix) {
		hs = hs[:64-len(suffix)]
	}
	return hs + suffix
}

func TestName(t *testing.T) {
	legal64 := strings.Repeat("a", 60) + "__xy" // exactly 64
	tests := []struct {
		name, prefix, tool, want string
	}{
		// Expected literals computed outside Go (Python: FNV-1a-32 by hand, base 36).
		{"legal verbatim", "bank", "transfer", "bank__transfer"},
		{"legal with dash and digits", "gh-2", "list_issues-v2", "gh-2__list_issues-v2"},
		{"dotted server", "my.srv", "search", "my_srv__search_1tzlooy"},
		{"unicode accent", "bank", "café", "bank__caf__1l35xft"},
		{"doc example", "my.srv", "café", "my_srv__caf__76ifrc"},
		{"emoji is one underscore", "bank", "send 💸", "bank__send___7s5h2q"},
		{"CJK", "docs", "検索", "docs_____1hbnknt"},
		{"empty everything", "", "", "_ztntfp"},
		{"90 characters", strings.Repeat("x", 40), strings.Repeat("y", 50),
			strings.Repeat("x", 40) + "__" + strings.Repeat("y", 15) + "_yfq78l"},
		{"65 legal characters", "", strings.Repeat("a", 65), strings.Repeat("a", 57) + "_cpucj0"},
		{"exactly 64 legal", "", legal64, legal64},
		{"exactly 64 with prefix", strings.Repeat("p", 30), strings.Repeat("t", 32), strings.Repeat("p", 30) + "__" + strings.Repeat("t", 32)},
		{"prefix empty uses tool alone", "", "search", "search"},
		{"empty tool keeps separator", "bank", "", "bank__"},
		{"dot in tool", "bank", "a.b", "bank__a_b_mtvu4s"},
		{"space in tool", "bank", "a b", "bank__a_b_muvsc2"},
		{"slash in tool", "bank", "a/b", "bank__a_b_yhiarl"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Name(tc.prefix, tc.tool)
			if got != tc.want {
				t.Errorf("Name(%q, %q) = %q, want %q", tc.prefix, tc.tool, got, tc.want)
			}
			if ref := refName(tc.prefix, tc.tool); got != ref {
				t.Errorf("Name(%q, %q) = %q, reference %q", tc.prefix, tc.tool, got, ref)
			}
			if !legalRE.MatchString(got) {
				t.Errorf("Name(%q, %q) = %q is not provider-legal", tc.prefix, tc.tool, got)
			}
		})
	}
}

func TestNameDistinctWhenOnlyIllegalCharactersDiffer(t *testing.T) {
	inputs := []string{"a.b", "a b", "a/b", "a:b", "a\x00b", "a\u202eb", "a😀b", "aéb", "a_b"}
	seen := map[string]string{}
	for _, in := range inputs {
		got := Name("srv", in)
		if prev, ok := seen[got]; ok {
			t.Errorf("Name(srv, %q) = Name(srv, %q) = %q", in, prev, got)
		}
		seen[got] = in
	}
	if len(seen) != len(inputs) {
		t.Fatalf("got %d distinct names for %d inputs", len(seen), len(inputs))
	}
}

func TestNameInvalidUTF8(t *testing.T) {
	// Each invalid byte becomes one '_'; the hash covers the raw bytes.
	got := Name("s", "a\xff\xfeb")
	h := fnv.New32a()
	h.Write([]byte("s__a\xff\xfeb"))
	want := "s__a__b_" + strconv.FormatUint(uint64(h.Sum32()), 36)
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestIsLegalName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"", false}, {"a", true}, {strings.Repeat("a", 64), true}, {strings.Repeat("a", 65), false},
		{"a.b", false}, {"a-b_C9", true}, {"é", false}, {"a b", false},
	} {
		if got := IsLegalName(tc.in); got != tc.want {
			t.Errorf("IsLegalName(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzName(f *testing.F) {
	f.Add("bank", "transfer")
	f.Add("my.srv", "café")
	f.Add("", "")
	f.Add(strings.Repeat("x", 40), strings.Repeat("y", 50))
	f.Fuzz(func(t *testing.T, prefix, tool string) {
		got := Name(prefix, tool)
		if !legalRE.MatchString(got) {
			t.Fatalf("Name(%q, %q) = %q: not legal", prefix, tool, got)
		}
		if len(got) > 64 {
			t.Fatalf("Name(%q, %q) = %q: longer than 64", prefix, tool, got)
		}
		if again := Name(prefix, tool); again != got {
			t.Fatalf("Name(%q, %q) not deterministic: %q then %q", prefix, tool, got, again)
		}
		if ref := refName(prefix, tool); got != ref {
			t.Fatalf("Name(%q, %q) = %q, reference %q", prefix, tool, got, ref)
		}
		full := tool
		if prefix != "" {
			full = prefix + "__" + tool
		}
		// Legal names are kept verbatim, so distinct legal inputs never meet.
		if legalRE.MatchString(full) != (got == full) {
			t.Fatalf("Name(%q, %q) = %q: verbatim iff legal violated", prefix, tool, got)
		}
	})
}
