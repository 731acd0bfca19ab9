package toolsearch

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// safetensorsFile encodes tensors (name → dtype, shape, raw bytes) in the
// safetensors format: an 8-byte little-endian header length, the JSON
// header, the data.
func safetensorsFile(t testing.TB, tensors map[string]rawTensor) []byte {
	t.Helper()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rt := tensors[n]
		header[n] = map[string]any{"dtype": rt.dtype, "shape": rt.shape, "data_offsets": []int{len(data), len(data) + len(rt.data)}}
		data = append(data, rt.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

type rawTensor struct {
	dtype string
	shape []int
	data  []byte
}

func f32Bytes(vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// tinyVocab is the tiny WordPiece model's vocabulary, each token with its
// vector: "zorp" means what "channel" means, "blick" what "invoice" means.
var tinyVocab = []struct {
	tok string
	vec [4]float32
}{
	{"[UNK]", [4]float32{9, 9, 9, 9}}, // never pooled
	{"send", [4]float32{0, 0, 1, 0}},
	{"text", [4]float32{1, 0, 0.2, 0}},
	{"channel", [4]float32{1, 0, 0, 0}},
	{"zorp", [4]float32{1, 0, 0, 0}},
	{"invoice", [4]float32{0, 1, 0, 0}},
	{"blick", [4]float32{0, 1, 0, 0}},
	{"customer", [4]float32{0, 0.8, 0, 0.2}},
	{"un", [4]float32{0, 0, 0, 1}},
	{"##happi", [4]float32{0, 0, 1, 1}},
	{"##ness", [4]float32{1, 1, 0, 0}},
	{".", [4]float32{0, 0, 0, 0.5}},
}

// writeTinyModel writes the tiny model to a directory, as F32 or F16.
func writeTinyModel(t testing.TB, dtype string) string {
	t.Helper()
	dir := t.TempDir()
	vocab := map[string]int{}
	var data []byte
	for i, e := range tinyVocab {
		vocab[e.tok] = i
		for _, x := range e.vec {
			switch dtype {
			case "F16":
				data = binary.LittleEndian.AppendUint16(data, toF16(x))
			default:
				data = append(data, f32Bytes(x)...)
			}
		}
	}
	tok := map[string]any{
		"version":       "1.0",
		"normalizer":    map[string]any{"type": "BertNormalizer", "lowercase": true},
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": vocab},
	}
	tb, _ := json.Marshal(tok)
	st := safetensorsFile(t, map[string]rawTensor{"embeddings": {dtype, []int{len(tinyVocab), 4}, data}})
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// toF16 converts a float32 that half precision holds exactly.
func toF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	if f == 0 {
		return sign
	}
	exp := int((b>>23)&0xff) - 127 + 15
	return sign | uint16(exp)<<10 | uint16((b>>13)&0x3ff)
}

func TestModelEmbed(t *testing.T) {
	for _, dtype := range []string{"F32", "F16"} {
		m, err := LoadModel(writeTinyModel(t, dtype))
		if err != nil {
			t.Fatalf("%s: %v", dtype, err)
		}
		if m.Dim() != 4 {
			t.Fatalf("dim %d", m.Dim())
		}
		// "Unhappiness" is un ##happi ##ness; "qqq" is unknown and left out;
		// the mean is (0,0,0,1)+(0,0,1,1)+(1,1,0,0) = (1,1,1,2), normalized.
		got := m.Embed("Unhappiness qqq")
		n := float32(math.Sqrt(7))
		want := []float32{1 / n, 1 / n, 1 / n, 2 / n}
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-3 {
				t.Fatalf("%s: Embed = %v, want %v", dtype, got, want)
			}
		}
		if v := m.Embed("qqq xyz"); v != nil {
			t.Errorf("no known token: %v, want nil", v)
		}
		if c := cosine(m.Embed("zorp"), m.Embed("channel")); math.Abs(float64(c)-1) > 1e-3 {
			t.Errorf("cosine(zorp, channel) = %v", c)
		}
	}
}

func TestWordPieceTokenize(t *testing.T) {
	tok, err := parseTokenizer([]byte(`{"normalizer":{"type":"BertNormalizer","lowercase":true},
		"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"un":1,"##happi":2,"##ness":3,",":4,"send":5}}}`))
	if err != nil {
		t.Fatal(err)
	}
	// "happiness" has no first piece: the unknown token, left out.
	if got := tok.encode("Unhappiness, send happiness", 10); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Errorf("encode = %v", got)
	}
	if got := tok.encode("send send send", 2); len(got) != 2 {
		t.Errorf("limit: %v", got)
	}
	if got := tok.encode(strings.Repeat("un", 60), 10); len(got) != 0 {
		t.Errorf("a word over max_input_chars_per_word: %v", got)
	}
}

func TestUnigramTokenize(t *testing.T) {
	tok, err := parseTokenizer([]byte(`{"normalizer":{"type":"Sequence","normalizers":[{"type":"Lowercase"}]},
		"pre_tokenizer":{"type":"Metaspace","replacement":"▁"},
		"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["▁send",-1],["▁",-2],["in",-3],["voice",-3],["invoice",-2.5],["▁in",-4],["s",-5]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	// "▁invoices": ▁ invoice s (-2-2.5-5) beats ▁in voice s (-4-3-5).
	if got := tok.encode("Send invoices", 10); !slices.Equal(got, []int{1, 2, 5, 7}) {
		t.Errorf("encode = %v", got)
	}
	// A character no token covers is unknown, left out.
	if got := tok.encode("sendé", 10); !slices.Equal(got, []int{1}) {
		t.Errorf("unknown character: %v", got)
	}
}

func TestF16(t *testing.T) {
	for h, want := range map[uint16]float32{0x3c00: 1, 0xc000: -2, 0x3555: 0.33325195, 0x0001: 5.9604645e-08, 0x8000: 0, 0x7bff: 65504} {
		if got := f16(h); got != want {
			t.Errorf("f16(%#x) = %v, want %v", h, got, want)
		}
	}
	if !math.IsInf(float64(f16(0x7c00)), 1) || !math.IsNaN(float64(f16(0x7e00))) {
		t.Error("f16 infinities and NaN")
	}
}

// TestSafetensorsErrors: each way a safetensors file can be wrong is an
// error wrapping ErrModel.
func TestSafetensorsErrors(t *testing.T) {
	good := safetensorsFile(t, map[string]rawTensor{"embeddings": {"F32", []int{2, 2}, f32Bytes(1, 2, 3, 4)}})
	if ts, err := parseSafetensors(good); err != nil || !slices.Equal(ts["embeddings"].data, []float32{1, 2, 3, 4}) {
		t.Fatalf("good file: %v %v", ts, err)
	}
	header := func(h string, data []byte) []byte {
		return append(append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...), data...)
	}
	for name, b := range map[string][]byte{
		"shorter than 8 bytes":    {1, 2, 3},
		"header longer than file": binary.LittleEndian.AppendUint64(nil, 100),
		"huge header length":      binary.LittleEndian.AppendUint64(nil, math.MaxUint64),
		"header not JSON":         header("{nope", nil),
		"header not an object":    header("[1,2]", nil),
		"tensor not an object":    header(`{"embeddings":7}`, nil),
		"offsets missing":         header(`{"embeddings":{"dtype":"F32","shape":[1]}}`, f32Bytes(1)),
		"offsets reversed":        header(`{"embeddings":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}}`, f32Bytes(1)),
		"offsets past the data":   header(`{"embeddings":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}}`, f32Bytes(1)),
		"size not the shape's":    header(`{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,4]}}`, f32Bytes(1)),
		"negative dimension":      header(`{"embeddings":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, f32Bytes(1)),
		"huge shape":              header(`{"embeddings":{"dtype":"F32","shape":[2147483647,2147483647,2147483647],"data_offsets":[0,4]}}`, f32Bytes(1)),
	} {
		if _, err := parseSafetensors(b); !errors.Is(err, ErrModel) {
			t.Errorf("%s: %v, want ErrModel", name, err)
		}
	}
	// A tensor of another type is skipped, not an error.
	ts, err := parseSafetensors(header(`{"mapping":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)))
	if err != nil || len(ts) != 0 {
		t.Errorf("an I64 tensor: %v %v", ts, err)
	}
}

// TestTokenizerErrors: each way a tokenizer.json can be wrong is an error
// wrapping ErrModel.
func TestTokenizerErrors(t *testing.T) {
	for name, s := range map[string]string{
		"not JSON":                  `{"model":`,
		"no model type":             `{"model":{}}`,
		"unknown model type":        `{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"WordPiece vocab a list":    `{"model":{"type":"WordPiece","vocab":[["a",0]]}}`,
		"WordPiece vocab empty":     `{"model":{"type":"WordPiece","vocab":{}}}`,
		"negative id":               `{"model":{"type":"WordPiece","vocab":{"a":-1}}}`,
		"Unigram vocab an object":   `{"model":{"type":"Unigram","vocab":{"a":0}}}`,
		"Unigram entry not a token": `{"model":{"type":"Unigram","vocab":[[1,0.5]]}}`,
		"Unigram score not number":  `{"model":{"type":"Unigram","vocab":[["a","x"]]}}`,
		"unk_id out of range":       `{"model":{"type":"Unigram","unk_id":3,"vocab":[["a",0]]}}`,
	} {
		if _, err := parseTokenizer([]byte(s)); !errors.Is(err, ErrModel) {
			t.Errorf("%s: %v, want ErrModel", name, err)
		}
	}
}

// TestLoadModelErrors: a directory without the files, or with files that
// do not fit together, is an error.
func TestLoadModelErrors(t *testing.T) {
	if _, err := LoadModel(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("empty directory: %v", err)
	}
	write := func(dir, name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok := []byte(`{"model":{"type":"WordPiece","vocab":{"a":0,"b":1,"c":2}}}`)
	for name, st := range map[string][]byte{
		"no embeddings tensor":         safetensorsFile(t, map[string]rawTensor{"other": {"F32", []int{3, 1}, f32Bytes(1, 2, 3)}}),
		"embeddings of rank 1":         safetensorsFile(t, map[string]rawTensor{"embeddings": {"F32", []int{3}, f32Bytes(1, 2, 3)}}),
		"fewer rows than ids":          safetensorsFile(t, map[string]rawTensor{"embeddings": {"F32", []int{2, 1}, f32Bytes(1, 2)}}),
		"not safetensors":              []byte("hello"),
		"header of no bytes":           make([]byte, 8),
		"header of 1 byte, none there": {1, 0, 0, 0, 0, 0, 0, 0},
	} {
		dir := t.TempDir()
		write(dir, "tokenizer.json", tok)
		write(dir, "model.safetensors", st)
		if _, err := LoadModel(dir); !errors.Is(err, ErrModel) {
			t.Errorf("%s: %v, want ErrModel", name, err)
		}
	}
	dir := t.TempDir()
	write(dir, "tokenizer.json", []byte("{"))
	write(dir, "model.safetensors", safetensorsFile(t, map[string]rawTensor{"embeddings": {"F32", []int{3, 1}, f32Bytes(1, 2, 3)}}))
	if _, err := LoadModel(dir); !errors.Is(err, ErrModel) {
		t.Errorf("bad tokenizer.json: %v, want ErrModel", err)
	}
}

// TestSemanticRerank: with a model, a tool whose text means what the
// request says, in other words, rises above one that only shares a word.
func TestSemanticRerank(t *testing.T) {
	m, err := LoadModel(writeTinyModel(t, "F32"))
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{
		{Name: "x__send_invoice", Server: "x", Description: "Send an invoice to a customer."},
		{Name: "x__send_text", Server: "x", Description: "Send text to a channel."},
	}
	lex := New(nil)
	lex.ReplaceAll(docs)
	sem := New(&Options{Model: m})
	sem.ReplaceAll(docs)
	names := func(hs []Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	// Lexically only "send" matches, so both requests rank alike; with the
	// model, "zorp" means channel and "blick" invoice.
	if a, b := names(lex.Search("send it to the zorp", 2, nil)), names(lex.Search("send a blick", 2, nil)); !slices.Equal(a, b) || len(a) != 2 {
		t.Fatalf("lexical: %v and %v", a, b)
	}
	if got := names(sem.Search("send it to the zorp", 2, nil)); !slices.Equal(got, []string{"x__send_text", "x__send_invoice"}) {
		t.Errorf("semantic: %v", got)
	}
	if got := names(sem.Search("send a blick", 2, nil)); !slices.Equal(got, []string{"x__send_invoice", "x__send_text"}) {
		t.Errorf("semantic: %v", got)
	}
	// Only what allow accepts, and only the limit.
	if got := names(sem.Search("send it to the zorp", 1, func(n string) bool { return n != "x__send_text" })); !slices.Equal(got, []string{"x__send_invoice"}) {
		t.Errorf("allow: %v", got)
	}
	// A Replace gives the new tools their vectors.
	sem.Replace("x", docs[:1])
	if got := names(sem.Search("send it to the zorp", 2, nil)); !slices.Equal(got, []string{"x__send_invoice"}) {
		t.Errorf("after Replace: %v", got)
	}
}

func FuzzParseSafetensors(f *testing.F) {
	f.Add(safetensorsFile(f, map[string]rawTensor{"embeddings": {"F32", []int{2, 2}, f32Bytes(1, 2, 3, 4)}}))
	f.Add(safetensorsFile(f, map[string]rawTensor{"e": {"F16", []int{1}, []byte{0, 0x3c}}, "w": {"BF16", []int{1}, []byte{0x80, 0x3f}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseSafetensors(b)
		if err != nil {
			if !errors.Is(err, ErrModel) {
				t.Fatalf("error not ErrModel: %v", err)
			}
			return
		}
		for name, x := range ts {
			n := 1
			for _, d := range x.shape {
				n *= d
			}
			if n != len(x.data) {
				t.Fatalf("%s: shape %v, %d values", name, x.shape, len(x.data))
			}
		}
	})
}

func FuzzParseTokenizer(f *testing.F) {
	f.Add([]byte(`{"normalizer":{"type":"BertNormalizer"},"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"un":1,"##happi":2}}}`), "Unhappiness is here")
	f.Add([]byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["▁a",-1],["b",-2]]}}`), "ab ba")
	f.Fuzz(func(t *testing.T, b []byte, text string) {
		tok, err := parseTokenizer(b)
		if err != nil {
			if !errors.Is(err, ErrModel) {
				t.Fatalf("error not ErrModel: %v", err)
			}
			return
		}
		n := tok.size()
		for _, id := range tok.encode(text, 64) {
			if id < 0 || id >= n || id == tok.unk {
				t.Fatalf("id %d of a vocabulary of %d (unk %d)", id, n, tok.unk)
			}
		}
	})
}
