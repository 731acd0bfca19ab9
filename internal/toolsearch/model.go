package toolsearch

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A Model is a static embedding model in the model2vec format: a
// tokenizer (tokenizer.json, WordPiece or Unigram, as the Hugging Face
// tokenizers library writes it) and one vector per token
// (model.safetensors, a tensor "embeddings" of shape [vocabulary,
// dimensions] in F32, F16 or BF16). A text's vector is the mean of its
// tokens' vectors, normalized to length 1. Models such as
// minishlab/potion-base-8M (MIT) are in this format. A Model is read-only
// once loaded and safe for concurrent use.
type Model struct {
	tok  *tokenizer
	dim  int
	vecs []float32 // row-major [vocabulary][dim]
}

// Limits of what LoadModel reads.
const (
	// MaxModelBytes is the largest model.safetensors LoadModel reads.
	MaxModelBytes = 1 << 30
	// MaxTokenizerBytes is the largest tokenizer.json LoadModel reads.
	MaxTokenizerBytes = 64 << 20
	// maxHeaderBytes is the largest safetensors header read.
	maxHeaderBytes = 16 << 20
	// maxEmbedTokens is how many tokens of a text are pooled.
	maxEmbedTokens = 512
)

// ErrModel is wrapped by every error of LoadModel about what a model's
// files hold (not about reading them).
var ErrModel = errors.New("toolsearch: invalid model")

// LoadModel reads a model2vec model from a directory: its
// model.safetensors and tokenizer.json. Nothing is downloaded.
func LoadModel(dir string) (*Model, error) {
	read := func(name string, limit int64) ([]byte, error) {
		p := filepath.Join(dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("toolsearch: model %s: %w", name, err)
		}
		if fi.Size() > limit {
			return nil, fmt.Errorf("%w: %s is %d bytes, over %d", ErrModel, name, fi.Size(), limit)
		}
		return os.ReadFile(p)
	}
	tb, err := read("tokenizer.json", MaxTokenizerBytes)
	if err != nil {
		return nil, err
	}
	tok, err := parseTokenizer(tb)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "tokenizer.json"), err)
	}
	mp := filepath.Join(dir, "model.safetensors")
	f, err := os.Open(mp)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: model model.safetensors: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("toolsearch: model model.safetensors: %w", err)
	}
	if fi.Size() > MaxModelBytes {
		return nil, fmt.Errorf("%w: model.safetensors is %d bytes, over %d", ErrModel, fi.Size(), MaxModelBytes)
	}
	ts, err := readSafetensors(f, fi.Size(), "embeddings")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mp, err)
	}
	emb, ok := ts["embeddings"]
	if !ok {
		return nil, fmt.Errorf("%w: model.safetensors has no tensor \"embeddings\"", ErrModel)
	}
	if len(emb.shape) != 2 || emb.shape[0] == 0 || emb.shape[1] == 0 {
		return nil, fmt.Errorf("%w: embeddings has shape %v, want [vocabulary, dimensions]", ErrModel, emb.shape)
	}
	if emb.shape[0] < tok.size() {
		return nil, fmt.Errorf("%w: %d embeddings for a vocabulary of %d tokens", ErrModel, emb.shape[0], tok.size())
	}
	return &Model{tok: tok, dim: emb.shape[1], vecs: emb.data}, nil
}

// Dim returns the length of the model's vectors.
func (m *Model) Dim() int { return m.dim }

// Embed returns the vector of a text: the mean of its first 512 tokens'
// vectors (unknown tokens left out), of length 1; nil when no token of the
// text is known.
func (m *Model) Embed(text string) []float32 {
	ids := m.tok.encode(text, maxEmbedTokens)
	if len(ids) == 0 {
		return nil
	}
	v := make([]float32, m.dim)
	for _, id := range ids {
		row := m.vecs[id*m.dim : (id+1)*m.dim]
		for i, x := range row {
			v[i] += x
		}
	}
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return nil
	}
	inv := float32(1 / math.Sqrt(norm))
	for i := range v {
		v[i] *= inv
	}
	return v
}

// cosine returns the dot product of two unit vectors (0 if either is nil).
func cosine(a, b []float32) float32 {
	if len(a) == 0 || len(a) != len(b) {
		return 0
	}
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// readFull fills b from r at off. An empty b reads nothing (a reader may
// answer io.EOF to a read of nothing at its end), and a file that ends
// before b is full, because it is shorter than its size said (it shrank
// while being read), is an ErrModel like any other short file.
func readFull(r io.ReaderAt, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil // io.ReaderAt may say io.EOF with the last byte read
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: the file ended %d bytes into a read of %d at offset %d", ErrModel, n, len(b), off)
	}
	return err
}

// tensor is one tensor of a safetensors file, converted to float32.
type tensor struct {
	shape []int
	data  []float32
}

// parseSafetensors reads a safetensors file held in memory (see
// readSafetensors).
func parseSafetensors(b []byte) (map[string]tensor, error) {
	return readSafetensors(bytes.NewReader(b), int64(len(b)), "")
}

// readSafetensors reads a safetensors file of size bytes: an 8-byte
// little-endian header length, a JSON header mapping each tensor's name to
// its dtype, shape and byte offsets in the data that follows, and the
// data. F32, F16 and BF16 tensors are read (as float32), only the one
// named only when only is not empty; tensors of other types are skipped;
// "__metadata__" is ignored. Every tensor's offsets must lie in the data
// and match its shape. The data is read in pieces, so a file is never held
// whole in memory beside its tensors.
func readSafetensors(r io.ReaderAt, size int64, only string) (map[string]tensor, error) {
	if size < 8 {
		return nil, fmt.Errorf("%w: safetensors: %d bytes, shorter than its header length", ErrModel, size)
	}
	var lenBuf [8]byte
	if err := readFull(r, lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("toolsearch: safetensors: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes || n > uint64(size-8) {
		return nil, fmt.Errorf("%w: safetensors: header of %d bytes in a file of %d", ErrModel, n, size)
	}
	hb := make([]byte, n)
	if err := readFull(r, hb, 8); err != nil {
		return nil, fmt.Errorf("toolsearch: safetensors: %w", err)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(hb, &header); err != nil {
		return nil, fmt.Errorf("%w: safetensors header: %v", ErrModel, err)
	}
	base, dataLen := int64(8+n), uint64(size-8)-n
	out := map[string]tensor{}
	for name, raw := range header {
		if name == "__metadata__" || only != "" && name != only {
			continue
		}
		var info struct {
			Dtype   string   `json:"dtype"`
			Shape   []int64  `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(raw, &info); err != nil {
			return nil, fmt.Errorf("%w: safetensors tensor %q: %v", ErrModel, name, err)
		}
		if len(info.Offsets) != 2 || info.Offsets[0] > info.Offsets[1] || info.Offsets[1] > dataLen {
			return nil, fmt.Errorf("%w: safetensors tensor %q: offsets %v outside the %d bytes of data", ErrModel, name, info.Offsets, dataLen)
		}
		count := uint64(1)
		shape := make([]int, len(info.Shape))
		for i, d := range info.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("%w: safetensors tensor %q: dimension %d", ErrModel, name, d)
			}
			shape[i] = int(d)
			count *= uint64(d)
			if count > dataLen {
				break // the size check below fails
			}
		}
		width := map[string]uint64{"F32": 4, "F16": 2, "BF16": 2}[info.Dtype]
		if width == 0 {
			continue // not a float tensor (a model2vec "mapping", say): not read
		}
		if count > dataLen || info.Offsets[1]-info.Offsets[0] != count*width {
			return nil, fmt.Errorf("%w: safetensors tensor %q: %d bytes for shape %v of %s", ErrModel, name, info.Offsets[1]-info.Offsets[0], info.Shape, info.Dtype)
		}
		vals := make([]float32, count)
		buf := make([]byte, min(1<<20, count*width))
		per := uint64(len(buf)) / width
		for done := uint64(0); done < count; {
			k := min(per, count-done)
			chunk := buf[:k*width]
			if err := readFull(r, chunk, base+int64(info.Offsets[0]+done*width)); err != nil {
				return nil, fmt.Errorf("toolsearch: safetensors tensor %q: %w", name, err)
			}
			for i := range k {
				switch info.Dtype {
				case "F32":
					vals[done+i] = math.Float32frombits(binary.LittleEndian.Uint32(chunk[4*i:]))
				case "F16":
					vals[done+i] = f16(binary.LittleEndian.Uint16(chunk[2*i:]))
				case "BF16":
					vals[done+i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(chunk[2*i:])) << 16)
				}
			}
			done += k
		}
		out[name] = tensor{shape: shape, data: vals}
	}
	return out, nil
}

// f16 converts an IEEE 754 half-precision number to float32.
func f16(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / 1024 / 16384
		if sign != 0 {
			return -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// tokenizer is the part of a tokenizer.json that model2vec models use: a
// WordPiece or Unigram model, with lowercasing when the normalizer says
// so, and words split at spaces and punctuation (WordPiece) or at spaces
// marked with "▁" (Unigram, Metaspace).
type tokenizer struct {
	kind      string // "WordPiece" or "Unigram"
	lowercase bool
	vocab     map[string]int
	unk       int // -1: none
	prefix    string
	maxChars  int
	scores    []float64 // Unigram: a token's log probability, by id
	maxLen    int       // Unigram: the longest token, in bytes
	metaspace string    // Unigram: the space marker
}

func (t *tokenizer) size() int {
	n := 0
	for _, id := range t.vocab {
		n = max(n, id+1)
	}
	return n
}

// parseTokenizer reads a tokenizer.json of a WordPiece or Unigram model.
func parseTokenizer(b []byte) (*tokenizer, error) {
	var f struct {
		Normalizer *struct {
			Type        string            `json:"type"`
			Lowercase   *bool             `json:"lowercase"`
			Normalizers []json.RawMessage `json:"normalizers"`
		} `json:"normalizer"`
		PreTokenizer *struct {
			Type        string `json:"type"`
			Replacement string `json:"replacement"`
		} `json:"pre_tokenizer"`
		Model struct {
			Type     string          `json:"type"`
			Vocab    json.RawMessage `json:"vocab"`
			UnkToken *string         `json:"unk_token"`
			UnkID    *int            `json:"unk_id"`
			Prefix   *string         `json:"continuing_subword_prefix"`
			MaxChars int             `json:"max_input_chars_per_word"`
		} `json:"model"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%w: tokenizer.json: %v", ErrModel, err)
	}
	t := &tokenizer{kind: f.Model.Type, unk: -1, vocab: map[string]int{}}
	if n := f.Normalizer; n != nil {
		switch {
		case n.Type == "BertNormalizer":
			t.lowercase = n.Lowercase == nil || *n.Lowercase
		case n.Type == "Lowercase":
			t.lowercase = true
		case n.Type == "Sequence":
			for _, raw := range n.Normalizers {
				var sub struct{ Type string }
				if json.Unmarshal(raw, &sub) == nil && sub.Type == "Lowercase" {
					t.lowercase = true
				}
			}
		}
	}
	switch t.kind {
	case "WordPiece":
		if err := json.Unmarshal(f.Model.Vocab, &t.vocab); err != nil || len(t.vocab) == 0 {
			return nil, fmt.Errorf("%w: tokenizer.json: a WordPiece vocab is an object of token to id: %v", ErrModel, err)
		}
		t.prefix = "##"
		if f.Model.Prefix != nil {
			t.prefix = *f.Model.Prefix
		}
		t.maxChars = f.Model.MaxChars
		if t.maxChars <= 0 {
			t.maxChars = 100
		}
		if f.Model.UnkToken != nil {
			if id, ok := t.vocab[*f.Model.UnkToken]; ok {
				t.unk = id
			}
		}
	case "Unigram":
		var entries [][2]json.RawMessage
		if err := json.Unmarshal(f.Model.Vocab, &entries); err != nil || len(entries) == 0 {
			return nil, fmt.Errorf("%w: tokenizer.json: a Unigram vocab is a list of [token, score]: %v", ErrModel, err)
		}
		t.scores = make([]float64, len(entries))
		for id, e := range entries {
			var tok string
			if err := json.Unmarshal(e[0], &tok); err != nil {
				return nil, fmt.Errorf("%w: tokenizer.json: Unigram entry %d: %v", ErrModel, id, err)
			}
			if err := json.Unmarshal(e[1], &t.scores[id]); err != nil {
				return nil, fmt.Errorf("%w: tokenizer.json: Unigram entry %d: %v", ErrModel, id, err)
			}
			if _, dup := t.vocab[tok]; !dup {
				t.vocab[tok] = id
			}
			t.maxLen = max(t.maxLen, len(tok))
		}
		if f.Model.UnkID != nil {
			if *f.Model.UnkID < 0 || *f.Model.UnkID >= len(entries) {
				return nil, fmt.Errorf("%w: tokenizer.json: unk_id %d outside the vocab", ErrModel, *f.Model.UnkID)
			}
			t.unk = *f.Model.UnkID
		}
		t.metaspace = "\u2581"
		if p := f.PreTokenizer; p != nil && p.Replacement != "" {
			t.metaspace = p.Replacement
		}
	default:
		return nil, fmt.Errorf("%w: tokenizer.json: model type %q (WordPiece and Unigram are read)", ErrModel, t.kind)
	}
	for tok, id := range t.vocab {
		if id < 0 {
			return nil, fmt.Errorf("%w: tokenizer.json: token %q has id %d", ErrModel, tok, id)
		}
	}
	return t, nil
}

// encode returns the ids of a text's first limit known tokens.
func (t *tokenizer) encode(text string, limit int) []int {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	if t.lowercase {
		text = strings.ToLower(text)
	}
	var ids []int
	emit := func(id int) bool {
		if id != t.unk && id >= 0 {
			ids = append(ids, id)
		}
		return len(ids) < limit
	}
	for _, w := range preTokens(text, t.kind == "WordPiece") {
		var ok bool
		if t.kind == "WordPiece" {
			ok = t.wordPiece(w, emit)
		} else {
			ok = t.unigram(t.metaspace+w, emit)
		}
		if !ok {
			break
		}
	}
	return ids
}

// preTokens splits text at spaces and control characters and, when punct
// is set, also around each punctuation or symbol character (as BERT's
// pre-tokenizer does).
func preTokens(text string, punct bool) []string {
	var out []string
	start := -1
	for i, r := range text {
		sep := unicode.IsSpace(r) || unicode.IsControl(r)
		isP := punct && (unicode.IsPunct(r) || unicode.IsSymbol(r))
		if sep || isP {
			if start >= 0 {
				out = append(out, text[start:i])
				start = -1
			}
			if isP {
				out = append(out, string(r))
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, text[start:])
	}
	return out
}

// wordPiece emits a word's tokens, longest match first; a word with a
// part not in the vocabulary is the unknown token (left out).
func (t *tokenizer) wordPiece(w string, emit func(int) bool) bool {
	if utf8.RuneCountInString(w) > t.maxChars {
		return emit(t.unk)
	}
	var ids []int
	for start := 0; start < len(w); {
		end, id := len(w), -1
		for end > start {
			sub := w[start:end]
			if start > 0 {
				sub = t.prefix + sub
			}
			if v, ok := t.vocab[sub]; ok {
				id = v
				break
			}
			_, size := utf8.DecodeLastRuneInString(w[start:end])
			end -= size
		}
		if id < 0 {
			return emit(t.unk)
		}
		ids = append(ids, id)
		start = end
	}
	for _, id := range ids {
		if !emit(id) {
			return false
		}
	}
	return true
}

// unigram emits the most probable segmentation of a word (Viterbi over
// the tokens' scores); a character no token covers is the unknown token.
func (t *tokenizer) unigram(w string, emit func(int) bool) bool {
	const unkScore = -100.0
	n := len(w)
	best := make([]float64, n+1)
	from := make([]int, n+1)
	tokID := make([]int, n+1)
	for i := 1; i <= n; i++ {
		best[i] = math.Inf(-1)
	}
	for i := 0; i < n; i++ {
		if math.IsInf(best[i], -1) || !utf8.RuneStart(w[i]) {
			continue
		}
		for j := i + 1; j <= n && j-i <= t.maxLen; j++ {
			if j < n && !utf8.RuneStart(w[j]) {
				continue
			}
			if id, ok := t.vocab[w[i:j]]; ok {
				if s := best[i] + t.scores[id]; s > best[j] {
					best[j], from[j], tokID[j] = s, i, id
				}
			}
		}
		// An unknown character, so that every text has a segmentation.
		_, size := utf8.DecodeRuneInString(w[i:])
		if s := best[i] + unkScore; s > best[i+size] {
			best[i+size], from[i+size], tokID[i+size] = s, i, -1
		}
	}
	var ids []int
	for j := n; j > 0; j = from[j] {
		ids = append(ids, tokID[j])
	}
	slices.Reverse(ids)
	for _, id := range ids {
		if !emit(id) {
			return false
		}
	}
	return true
}
