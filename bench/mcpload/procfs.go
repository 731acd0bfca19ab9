package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/cputime"
)

// clockTick is USER_HZ, the unit of the CPU times in /proc: 100 on every Linux
// architecture Go supports (the kernel fixes it for user space).
const clockTick = 10 * time.Millisecond

// errNoVmRSS is returned by parseVmRSS when the status file has no VmRSS line,
// as for a zombie or kernel thread.
var errNoVmRSS = errors.New("no VmRSS line")

// parseVmRSS returns the VmRSS value, in KiB, of a /proc/PID/status file.
func parseVmRSS(status []byte) (int64, error) {
	for line := range bytes.SplitSeq(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("malformed VmRSS line %q", line)
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 {
			return 0, fmt.Errorf("malformed VmRSS value %q", f[0])
		}
		return kb, nil
	}
	return 0, errNoVmRSS
}

// parseStatCPU returns utime+stime, in clock ticks, from a /proc/PID/stat
// file. The command name (field 2) is in parentheses and may itself contain
// blanks and parentheses, so fields are counted from the last ')'.
func parseStatCPU(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	f := bytes.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name, want at least 13", len(f))
	}
	var v [2]int64
	for i, s := range f[11:13] {
		var err error
		v[i], err = strconv.ParseInt(string(s), 10, 64)
		if err != nil || v[i] < 0 {
			return 0, fmt.Errorf("stat: bad CPU time %q", s)
		}
	}
	sum, ok := sumNonNeg(v[0], v[1])
	if !ok {
		return 0, errors.New("stat: CPU time overflows")
	}
	return sum, nil
}

// parseMachineCPU returns the busy and total clock ticks of all CPUs from the
// first ("cpu ") line of /proc/stat. Busy is everything but idle and iowait;
// guest time is already counted in user and nice, so it is left out.
func parseMachineCPU(stat []byte) (busy, total int64, err error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 9 || string(f[0]) != "cpu" {
		return 0, 0, errors.New("/proc/stat: no aggregate cpu line with 8 values")
	}
	var v [8]int64
	for i := range v {
		v[i], err = strconv.ParseInt(string(f[i+1]), 10, 64)
		if err != nil || v[i] < 0 {
			return 0, 0, fmt.Errorf("/proc/stat: bad value %q", f[i+1])
		}
	}
	// user nice system idle iowait irq softirq steal
	var ok bool
	if busy, ok = sumNonNeg(v[0], v[1], v[2], v[5], v[6], v[7]); !ok {
		return 0, 0, errors.New("/proc/stat: values overflow")
	}
	if total, ok = sumNonNeg(busy, v[3], v[4]); !ok {
		return 0, 0, errors.New("/proc/stat: values overflow")
	}
	return busy, total, nil
}

// sumNonNeg adds non-negative values; ok is false if the sum overflows.
func sumNonNeg(vs ...int64) (sum int64, ok bool) {
	for _, v := range vs {
		if v > math.MaxInt64-sum {
			return 0, false
		}
		sum += v
	}
	return sum, true
}

// readRSS returns the resident set size of process pid, in KiB.
func readRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	return parseVmRSS(b)
}

// readProcCPU returns the CPU time (user+system) process pid has used.
func readProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	t, err := parseStatCPU(b)
	return time.Duration(t) * clockTick, err
}

// readMachineCPU returns the busy CPU time of the whole machine, all cores.
func readMachineCPU() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	busy, _, err := parseMachineCPU(b)
	return time.Duration(busy) * clockTick, err
}

// selfCPU returns the user+system CPU time this process has used (0 where
// it cannot be read).
func selfCPU() time.Duration {
	d, _ := cputime.Self()
	return d
}

func selfPID() int { return os.Getpid() }
