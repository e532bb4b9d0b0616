package testenv

import (
	"strconv"
	"strings"
)

// SumMetric is the sum of every series of metric name (all label sets) in
// a Prometheus text exposition; 0 when there is none.
func SumMetric(exposition, name string) float64 {
	var sum float64
	for _, line := range strings.Split(exposition, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}
