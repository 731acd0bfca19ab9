package relay

import "io"

// partsReader reads its parts one after the other. Its WriteTo writes
// them as they are: net/http copies a body without one through a new
// buffer (io.MultiReader's WriteTo does too).
type partsReader struct{ parts [][]byte }

func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for len(r.parts) > 0 {
		k, err := w.Write(r.parts[0])
		n += int64(k)
		r.parts[0] = r.parts[0][k:]
		if err != nil {
			return n, err
		}
		r.parts = r.parts[1:]
	}
	return n, nil
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for len(r.parts) > 0 && n < len(p) {
		k := copy(p[n:], r.parts[0])
		n += k
		if r.parts[0] = r.parts[0][k:]; len(r.parts[0]) == 0 {
			r.parts = r.parts[1:]
		}
	}
	if n == 0 && len(r.parts) == 0 {
		return 0, io.EOF
	}
	return n, nil
}
