package benchkit

import (
	"bufio"
	"fmt"
	"os"
	"runtime/metrics"
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

// Resident is what the process holds in memory now: resident pages backed
// by no file (the Go heap, stacks, the runtime's own) and by files (the
// executable's pages that ran), from /proc/self/status, and the Go
// runtime's own account of the memory it mapped.
type Resident struct {
	AnonKiB, FileKiB int64
	// HeapInUse is the heap's spans holding objects, live or not yet
	// swept; HeapFree its spans free but still mapped; Stacks the
	// goroutine stacks; Other the runtime's metadata and buffers.
	HeapInUse, HeapFree, Stacks, Other uint64
}

// ReadResident reads [Resident]; the /proc figures are zero off Linux.
func ReadResident() Resident {
	var r Resident
	r.AnonKiB, _ = procStatusKiB("RssAnon")
	r.FileKiB, _ = procStatusKiB("RssFile")
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
		{Name: "/memory/classes/os-stacks:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	v := func(i int) uint64 {
		if samples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return samples[i].Value.Uint64()
	}
	r.HeapInUse = v(0) + v(1)
	r.HeapFree = v(2)
	r.Stacks = v(3) + v(4)
	if total, released := v(5), v(6); total > r.HeapInUse+r.HeapFree+r.Stacks+released {
		r.Other = total - r.HeapInUse - r.HeapFree - r.Stacks - released
	}
	return r
}

// String is the breakdown in MiB.
func (r Resident) String() string {
	mib := func(b uint64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("resident %.1f MiB anonymous + %.1f MiB of files; Go: heap in use %.1f MiB, heap free %.1f MiB, stacks %.1f MiB, runtime %.1f MiB",
		float64(r.AnonKiB)/1024, float64(r.FileKiB)/1024, mib(r.HeapInUse), mib(r.HeapFree), mib(r.Stacks), mib(r.Other))
}
