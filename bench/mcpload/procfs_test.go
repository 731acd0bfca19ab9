package main

import (
	"os"
	"testing"
)

const sampleStatus = "Name:\tmcpload\nVmPeak:\t  10000 kB\nVmRSS:\t    9876 kB\nThreads:\t5\n"

func TestParseVmRSS(t *testing.T) {
	if kb, err := parseVmRSS([]byte(sampleStatus)); err != nil || kb != 9876 {
		t.Errorf("parseVmRSS = %d, %v; want 9876", kb, err)
	}
	for name, in := range map[string]string{
		"missing (zombie)": "Name:\tx\nState:\tZ (zombie)\n",
		"no unit":          "VmRSS:\t9876\n",
		"other unit":       "VmRSS:\t9876 MB\n",
		"not a number":     "VmRSS:\tlots kB\n",
		"negative":         "VmRSS:\t-5 kB\n",
		"overflow":         "VmRSS:\t99999999999999999999 kB\n",
		"empty":            "",
	} {
		if kb, err := parseVmRSS([]byte(in)); err == nil {
			t.Errorf("%s: parseVmRSS = %d, want an error", name, kb)
		}
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with blanks and parentheses; utime 1234, stime 56.
	in := "42 (evil) 1 2 (x) R 1 42 42 0 -1 4194560 100 0 0 0 1234 56 0 0 20 0 1 0 100 1000 200\n"
	if got, err := parseStatCPU([]byte(in)); err != nil || got != 1290 {
		t.Errorf("parseStatCPU = %d, %v; want 1290", got, err)
	}
	for name, in := range map[string]string{
		"no parens":    "42 x R 1 42 42 0 -1 4194560 100 0 0 0 1234 56",
		"too short":    "42 (x) R 1 42 42 0 -1 4194560 100 0 0 0 1234",
		"bad utime":    "42 (x) R 1 42 42 0 -1 4194560 100 0 0 0 12a4 56 0",
		"negative":     "42 (x) R 1 42 42 0 -1 4194560 100 0 0 0 -4 56 0",
		"overflow sum": "42 (x) R 1 42 42 0 -1 4194560 100 0 0 0 9223372036854775807 9223372036854775807 0",
		"empty":        "",
	} {
		if got, err := parseStatCPU([]byte(in)); err == nil {
			t.Errorf("%s: parseStatCPU = %d, want an error", name, got)
		}
	}
}

func TestParseMachineCPU(t *testing.T) {
	in := "cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 50 2 25 500 10 1 1 0 0 0\n"
	busy, total, err := parseMachineCPU([]byte(in))
	if err != nil || busy != 161 || total != 1181 {
		t.Errorf("parseMachineCPU = %d, %d, %v; want 161, 1181", busy, total, err)
	}
	for name, in := range map[string]string{
		"per-cpu first": "cpu0 1 2 3 4 5 6 7 8\n",
		"too few":       "cpu  1 2 3 4 5 6 7\n",
		"bad value":     "cpu  1 2 x 4 5 6 7 8\n",
		"negative":      "cpu  1 2 -3 4 5 6 7 8\n",
		"overflow":      "cpu  9223372036854775807 9223372036854775807 3 4 5 6 7 8\n",
		"empty":         "",
	} {
		if b, tot, err := parseMachineCPU([]byte(in)); err == nil {
			t.Errorf("%s: parseMachineCPU = %d, %d, want an error", name, b, tot)
		}
	}
}

func TestReadOwnProc(t *testing.T) {
	pid := os.Getpid()
	if kb, err := readRSS(pid); err != nil || kb <= 0 {
		t.Errorf("readRSS(self) = %d, %v", kb, err)
	}
	if _, err := readProcCPU(pid); err != nil {
		t.Errorf("readProcCPU(self): %v", err)
	}
	if d, err := readMachineCPU(); err != nil || d <= 0 {
		t.Errorf("readMachineCPU = %v, %v", d, err)
	}
	if _, err := readRSS(-1); err == nil {
		t.Error("readRSS(-1) succeeded")
	}
}

func FuzzParseVmRSS(f *testing.F) {
	f.Add([]byte(sampleStatus))
	f.Add([]byte("VmRSS: 1 kB"))
	f.Add([]byte("VmRSS:"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if kb, err := parseVmRSS(b); err == nil && kb < 0 {
			t.Fatalf("negative RSS %d", kb)
		}
	})
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add([]byte("42 (a b) R 1 42 42 0 -1 4194560 100 0 0 0 1234 56 0 0"))
	f.Add([]byte("1 ()) R"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if v, err := parseStatCPU(b); err == nil && v < 0 {
			t.Fatalf("negative CPU time %d", v)
		}
	})
}

func FuzzParseMachineCPU(f *testing.F) {
	f.Add([]byte("cpu  100 5 50 1000 20 3 2 1 7 0\n"))
	f.Add([]byte("cpu 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		busy, total, err := parseMachineCPU(b)
		if err == nil && (busy < 0 || total < busy) {
			t.Fatalf("busy %d total %d", busy, total)
		}
	})
}
