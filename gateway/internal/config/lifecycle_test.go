package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestShutdownDrain: absent (or null) is the default, 0 is no drain, a
// duration is kept; a Config built by hand has none.
func TestShutdownDrain(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want time.Duration
	}{
		{"", DefaultShutdownDrain},
		{"shutdownDrain: ~\n", DefaultShutdownDrain},
		{"shutdownDrain: 0\n", 0},
		{"shutdownDrain: 0s\n", 0},
		{"{listen: '127.0.0.1:1', shutdownDrain: 0}\n", 0},
		{"# é\nlisten: 127.0.0.1:1\nshutdownDrain:   0 # no drain\n", 0},
		{"shutdownDrain: 45s\n", 45 * time.Second},
		{"shutdownTimeout: 3s\n", DefaultShutdownDrain},
	} {
		c, err := Parse([]byte(tc.src), "g.yaml", "/srv")
		if err != nil {
			t.Fatalf("%q: %v", tc.src, err)
		}
		if c.ShutdownDrain != tc.want {
			t.Errorf("%q: drain %v, want %v", tc.src, c.ShutdownDrain, tc.want)
		}
	}
	if (&Config{}).ShutdownDrain != 0 {
		t.Error("a Config built by hand drains")
	}
}

// TestShutdownDrainErrors: each way shutdownDrain can be wrong is a *Error
// naming the field, with a fix.
func TestShutdownDrainErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"shutdownDrain: -1s\n", "must not be negative"},
		{"shutdownDrain: 10\n", "has no unit"},
		{"shutdownDrain: soon\n", "not a duration"},
		{"shutdownDrain: [10s]\n", "must be a duration"},
		{"shutdownDrain: {s: 1}\n", "must be a duration"},
	} {
		_, err := Parse([]byte(tc.src), "g.yaml", "/srv")
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != "shutdownDrain" || ce.Fix == "" || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("%q: %v (field %q), want a *Error on shutdownDrain saying %q", tc.src, err, fieldOf(ce), tc.want)
		}
	}
}

func fieldOf(ce *Error) string {
	if ce == nil {
		return ""
	}
	return ce.Field
}

// TestInstance: a pod name is accepted as it is; absent means derived.
func TestInstance(t *testing.T) {
	for _, name := range []string{"gatehouse-0", "gw.eu-west-1_a", "7", strings.Repeat("a", MaxInstanceLen)} {
		c, err := Parse([]byte("instance: "+name+"\n"), "g.yaml", "/srv")
		if err != nil || c.Instance != name {
			t.Errorf("%q: %v, instance %q", name, err, c.Instance)
		}
	}
	c, err := Parse(nil, "g.yaml", "/srv")
	if err != nil || c.Instance != "" {
		t.Fatalf("absent: %v %q", err, c.Instance)
	}
}

// TestInstanceErrors: each way an instance name can be wrong, in the file
// and in GATEHOUSE_INSTANCE (SetInstance, which then changes nothing).
func TestInstanceErrors(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"gw#1", "holds a character"},
		{"a/b", "holds a character"},
		{"a b", "holds a character"},
		{"-gw", "does not begin"},
		{".gw", "does not begin"},
		{"été", "holds a character"},
		{strings.Repeat("a", MaxInstanceLen+1), "more than 253"},
	} {
		_, err := Parse([]byte("instance: '"+tc.name+"'\n"), "g.yaml", "/srv")
		var ce *Error
		if !errors.As(err, &ce) || ce.Field != "instance" || ce.Fix == "" || !strings.Contains(ce.Msg, tc.want) {
			t.Errorf("file %q: %v, want a *Error on instance saying %q", tc.name, err, tc.want)
		}
		c, err := Parse([]byte("instance: gw-0\n"), "g.yaml", "/srv")
		if err != nil {
			t.Fatal(err)
		}
		err = c.SetInstance(tc.name, "$GATEHOUSE_INSTANCE")
		if !errors.As(err, &ce) || ce.File != "$GATEHOUSE_INSTANCE" || !strings.Contains(ce.Msg, tc.want) || c.Instance != "gw-0" {
			t.Errorf("env %q: %v, instance now %q", tc.name, err, c.Instance)
		}
	}
	for _, src := range []string{"instance: [a]\n", "instance: {a: 1}\n"} {
		if _, err := Parse([]byte(src), "g.yaml", "/srv"); err == nil {
			t.Errorf("%q accepted", src)
		}
	}
	if err := CheckInstance(""); err == nil {
		t.Error("empty name accepted")
	}
	c := &Config{}
	if err := c.SetInstance("gatehouse-2", "$GATEHOUSE_INSTANCE"); err != nil || c.Instance != "gatehouse-2" {
		t.Errorf("SetInstance: %v %q", err, c.Instance)
	}
}
