package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// procCPU is the CPU time (user + system, seconds) the machine's
// processes have used, summed by executable name, with the harness
// itself as "harness". It is for where a saturated run spends its CPU:
// on a machine running nothing else, the names are the store's.
type procCPU map[string]float64

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// readProcCPU reads /proc; nil where there is none.
func readProcCPU() procCPU {
	self := os.Getpid()
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil || len(dirs) == 0 {
		return nil
	}
	out := procCPU{}
	for _, d := range dirs {
		pid, _ := strconv.Atoi(filepath.Base(d))
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		name := s[open+1 : closing]
		cmdline, err := os.ReadFile(d + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue // a kernel thread: its CPU is nobody's in particular
		}
		if name == "redis-server" || name == "redis-sentinel" {
			// which one: their command line names the port
			name += redisPort(string(cmdline))
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 13 { // state is f[0]; utime, stime are fields 14 and 15 of stat
			continue
		}
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		if pid == self {
			name = "harness"
		}
		if name == "posedge" || name == "bench.test" {
			name += " pid" + strconv.Itoa(pid) // other people's stores run beside this one
		}
		out[name] += (ut + st) / clockTicks
	}
	return out
}

// machineTicks are the machine's CPU times from /proc/stat's first line,
// in clock ticks: what the hypervisor took (steal) and the sum of every
// field.
type machineTicks struct{ Steal, Total float64 }

// readMachineTicks reads /proc/stat; ok is false where there is none.
func readMachineTicks() (machineTicks, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineTicks{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return parseMachineTicks(line)
}

// parseMachineTicks reads "cpu user nice system idle iowait irq softirq
// steal guest guest_nice"; guest time is already counted in user.
func parseMachineTicks(line string) (machineTicks, bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return machineTicks{}, false
	}
	var t machineTicks
	for i, v := range f[1:min(len(f), 9)] {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return machineTicks{}, false
		}
		t.Total += x
		if i == 7 {
			t.Steal = x
		}
	}
	return t, true
}

// stealShare is the share (0-1) of the machine's CPU time the hypervisor
// took between a and b; -1 when unknown. A VM whose host is busy loses
// CPU time its load average never shows: the same "idle" machine gave
// raw EVALSHA at 21,800/s one day and 4,500/s with ~30 % stolen another.
func stealShare(a, b machineTicks, okA, okB bool) float64 {
	if !okA || !okB || b.Total <= a.Total {
		return -1
	}
	return (b.Steal - a.Steal) / (b.Total - a.Total)
}

// perOpMicros is the CPU (µs) each process name spent per operation
// between a and b, largest first, with their total: "posedge 120,
// redis-server 80, harness 60 = 260 µs".
func perOpMicros(a, b procCPU, n int) (string, float64) {
	if a == nil || b == nil || n <= 0 {
		return "no /proc", 0
	}
	type use struct {
		name string
		us   float64
	}
	var uses []use
	var total float64
	for name, v := range b {
		d := (v - a[name]) * 1e6 / float64(n)
		if d < 1 { // under 1 µs an operation: not this run's
			continue
		}
		uses = append(uses, use{name, d})
		total += d
	}
	slices.SortFunc(uses, func(x, y use) int {
		switch {
		case x.us > y.us:
			return -1
		case x.us < y.us:
			return 1
		}
		return strings.Compare(x.name, y.name)
	})
	parts := make([]string, len(uses))
	for i, u := range uses {
		parts[i] = fmt.Sprintf("%s %.0f", u.name, u.us)
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" = %.0f µs", total), total
}

// redisPort is " :<port>" from a redis-server or redis-sentinel command
// line ("redis-server *:6379", "redis-server /path/6379.conf" as
// testenv starts them: the port is its config file's name), else "".
func redisPort(cmdline string) string {
	for _, a := range strings.FieldsFunc(cmdline, func(r rune) bool { return r == 0 || r == ' ' }) {
		if i := strings.LastIndexByte(a, ':'); i >= 0 && i+1 < len(a) {
			if _, err := strconv.Atoi(a[i+1:]); err == nil {
				return " :" + a[i+1:]
			}
		}
	}
	return ""
}
