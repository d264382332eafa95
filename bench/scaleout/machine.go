package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// machineTicks reads the first line of /proc/stat (Linux only): the ticks
// every core has spent busy and in all, since boot.
func machineTicks() (busy, total int64, err error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, fmt.Errorf("machine cpu: %w", err)
	}
	return parseCPULine(strings.SplitN(string(b), "\n", 2)[0])
}

// parseCPULine parses /proc/stat's "cpu user nice system idle iowait irq
// softirq steal …" line; idle and iowait are not busy. Guest time is
// already counted in user and nice, so only the first eight fields count.
func parseCPULine(line string) (busy, total int64, err error) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("machine cpu: unexpected /proc/stat line %q", line)
	}
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("machine cpu: %w", err)
		}
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total, nil
}
