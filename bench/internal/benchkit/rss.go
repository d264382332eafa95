package benchkit

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// ProcessRSS returns the resident memory (VmRSS) of process pid in bytes,
// read from /proc (Linux only).
func ProcessRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("process rss: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "<n> kB"
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("process rss: %w", err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("process rss: no VmRSS in /proc/%d/status", pid)
}

// RSS returns the server's resident memory in bytes.
func (s *Server) RSS() (int64, error) { return ProcessRSS(s.Pid()) }
