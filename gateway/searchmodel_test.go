package gateway

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// writeSearchModel writes a tiny model2vec model (tokenizer.json and
// model.safetensors) in which "zorp" means what "open" and "new" mean.
func writeSearchModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	vecs := map[string][3]float32{
		"[UNK]": {0, 0, 0}, "close": {1, 0, 0}, "done": {1, 0, 0}, "issue": {0, 1, 0},
		"open": {0, 0, 1}, "new": {0, 0, 1}, "zorp": {0, 0, 1}, "list": {0, 0.3, 0}, "project": {0, 0.2, 0.2},
	}
	vocab := map[string]int{}
	var data []byte
	for _, tok := range []string{"[UNK]", "close", "done", "issue", "open", "new", "zorp", "list", "project"} {
		vocab[tok] = len(vocab)
		for _, x := range vecs[tok] {
			data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
		}
	}
	tj, _ := json.Marshal(map[string]any{
		"normalizer": map[string]any{"type": "BertNormalizer", "lowercase": true},
		"model":      map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "vocab": vocab},
	})
	header, _ := json.Marshal(map[string]any{"embeddings": map[string]any{"dtype": "F32", "shape": []int{len(vocab), 3}, "data_offsets": []int{0, len(data)}}})
	st := append(binary.LittleEndian.AppendUint64(nil, uint64(len(header))), header...)
	for name, b := range map[string][]byte{"tokenizer.json": tj, "model.safetensors": append(st, data...)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSearchModel: with search.model, gatehouse__search_tools re-ranks by
// the model ("zorp" means open: tracker__create_issue rises to the top);
// without it the same request ranks by words alone; a search.model the
// gateway cannot read stops it from starting, naming the field.
func TestSearchModel(t *testing.T) {
	model := writeSearchModel(t)
	with := newSearchEnv(t, "", "search: {enabled: true, model: "+model+"}\n")
	without := newSearchEnv(t, "", "search: {enabled: true}\n")
	got := search(t, session(t, with.url, "bob-token"), "zorp issue")
	if len(got) == 0 || got[0] != "tracker__create_issue" {
		t.Errorf("with the model: %v, want tracker__create_issue first", got)
	}
	if plain := search(t, session(t, without.url, "bob-token"), "zorp issue"); len(plain) == 0 || plain[0] == "tracker__create_issue" {
		t.Errorf("without the model: %v, want another tool first (or the model changed nothing)", plain)
	}

	for name, dir := range map[string]string{"missing": filepath.Join(t.TempDir(), "none"), "empty": t.TempDir()} {
		cfgDir := t.TempDir()
		cfg, err := ParseConfig([]byte("listen: 127.0.0.1:0\nstore: 'memory:'\nsearch: {model: "+dir+"}\n"), filepath.Join(cfgDir, "gh.yaml"), cfgDir)
		if err != nil {
			t.Fatal(err)
		}
		g, err := New(context.Background(), cfg, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != "search.model" {
			if g != nil {
				g.Close()
			}
			t.Errorf("%s model directory: New: %v, want a *ConfigError for search.model", name, err)
		}
	}
}
