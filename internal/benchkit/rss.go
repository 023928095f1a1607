package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// PeakRSS returns the process's peak resident set size in bytes and where
// the figure came from: VmHWM in /proc/self/status (since the last
// [ResetPeakRSS]), else getrusage's ru_maxrss (since the process started).
func PeakRSS() (int64, string, error) {
	if kib, err := procStatusKiB("VmHWM"); err == nil {
		return kib * 1024, "VmHWM", nil
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, "", err
	}
	return ru.Maxrss * 1024, "getrusage maxrss", nil // kilobytes on Linux
}

// ResetPeakRSS sets the peak resident set size (VmHWM) back to the current
// one, so that a later [PeakRSS] reports the peak of what ran in between.
// It needs Linux; elsewhere it returns an error and PeakRSS keeps the
// process's peak.
func ResetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

func procStatusKiB(field string) (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s not in /proc/self/status", field)
}
