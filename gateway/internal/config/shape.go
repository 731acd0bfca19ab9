package config

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// checkShape walks the document's nodes beside the Go type they decode
// into and returns the first mistake of shape as the user wrote it: the
// field's YAML path ("rateLimit.window", "auth.tokens[0].sha256"), what
// was wrong in the config's own words (an unknown key with the nearest
// known one, a value that is not a duration, a list where a mapping
// belongs), and the fix. It returns nil when it finds none; the decoder's
// error, with its line, is the answer for anything it does not check. A
// type that reads its own YAML (yaml.Unmarshaler: servers' entries, audit,
// drift) reports its own mistakes and is not entered.
func checkShape(n *yaml.Node, t reflect.Type, path string) *Error {
	if n == nil || n.Kind == 0 { // an empty document: every default
		return nil
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkShape(n.Content[0], t, path)
	}
	if n.Kind == yaml.AliasNode {
		return checkShape(n.Alias, t, path)
	}
	if n.Tag == "!!null" {
		return nil // absent: the default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	if t == durationType {
		if n.Kind != yaml.ScalarNode {
			return shapeErr(path, "must be a duration, not "+kindWord(n), durationFix)
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			if _, ierr := strconv.ParseInt(n.Value, 10, 64); ierr == nil && n.Tag == "!!int" {
				return shapeErr(path, fmt.Sprintf("%s has no unit", n.Value), durationFix)
			}
			return shapeErr(path, fmt.Sprintf("%q is not a duration", n.Value), durationFix)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return shapeErr(path, "must be a mapping of fields, not "+kindWord(n), "write "+fieldOr(path)+": {field: value, ...}; its fields are "+strings.Join(fieldNames(t), ", "))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				return unknownField(t, path, k.Value)
			}
			if e := checkShape(v, f.Type, join(path, k.Value)); e != nil {
				return e
			}
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return shapeErr(path, "must be a mapping of names to entries, not "+kindWord(n), "write "+fieldOr(path)+": {NAME: ..., ...}")
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if e := checkShape(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value)); e != nil {
				return e
			}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return shapeErr(path, "must be a list, not "+kindWord(n), "write "+fieldOr(path)+": [a, b] (one item also goes in a list: [a])")
		}
		for i, c := range n.Content {
			if e := checkShape(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); e != nil {
				return e
			}
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			return shapeErr(path, "must be a string, not "+kindWord(n), "write one value, quoted when it holds ': ' or starts with a special character")
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" {
			return shapeErr(path, fmt.Sprintf("must be true or false, not %s", valueWord(n)), "write true or false")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			return shapeErr(path, fmt.Sprintf("must be a whole number, not %s", valueWord(n)), "write a number such as 100, without quotes or units")
		}
	case reflect.Float32, reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.Tag != "!!int" && n.Tag != "!!float") {
			return shapeErr(path, fmt.Sprintf("must be a number, not %s", valueWord(n)), "write a number such as 0.5, without quotes")
		}
	}
	return nil
}

var (
	unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	durationType    = reflect.TypeFor[time.Duration]()
)

const durationFix = "write a duration with its unit: 500ms, 90s, 5m, 1h30m (units: ms, s, m, h)"

func shapeErr(path, msg, fix string) *Error {
	return &Error{Field: path, Msg: msg, Fix: fix}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func fieldOr(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

// kindWord names what a node is, for a message.
func kindWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "an alias"
}

func valueWord(n *yaml.Node) string {
	if n.Kind != yaml.ScalarNode {
		return kindWord(n)
	}
	return strconv.Quote(n.Value)
}

// yamlName is a struct field's YAML key ("" when it has none: not read).
func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func fieldByTag(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if n := yamlName(f); n != "" && n == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// fieldNames are t's YAML keys, in declaration order, without the ones
// declared only to refuse them (json:"-": a secret written in the file).
func fieldNames(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if n := yamlName(f); n != "" && f.Tag.Get("json") != "-" {
			out = append(out, n)
		}
	}
	return out
}

// unknownField is the error of key, which t (at path) does not have: the
// nearest field when one is close (a different case, a letter or two
// off), else the fields there are.
func unknownField(t reflect.Type, path, key string) *Error {
	names := fieldNames(t)
	e := &Error{Field: join(path, key), Msg: fmt.Sprintf("unknown field %q", key)}
	if path != "" {
		e.Msg += " in " + path
	}
	if near := nearest(key, names); near != "" {
		e.Fix = fmt.Sprintf("did you mean %s?", join(path, near))
	} else {
		e.Fix = fmt.Sprintf("the fields of %s are %s (docs/gateway.md, Config fields)", fieldOr(path), strings.Join(names, ", "))
	}
	return e
}

// nearest is the name closest to key: equal but for case, else at most two
// edits away (one for short keys), else "".
func nearest(key string, names []string) string {
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return n
		}
	}
	best, bestD := "", 3
	limit := 2
	if len(key) <= 4 {
		limit = 1
	}
	for _, n := range names {
		if d := editDistance(strings.ToLower(key), strings.ToLower(n)); d <= limit && d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, with a
// transposition of two neighbours counting one (Damerau's restricted
// form): "maxPerSubjcet" is one edit from "maxPerSubject".
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = slices.Min([]int{prev[j] + 1, cur[j-1] + 1, prev[j-1] + cost})
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
