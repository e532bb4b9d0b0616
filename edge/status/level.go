package status

// Level is the verdict of a check and of the whole report. Its JSON form
// is the contract's string ("ok", "warn", "crit", "unknown").
type Level string

// Levels in rising order of concern (unknown is reported apart: it means
// "could not tell").
const (
	OK      Level = "ok"
	Warn    Level = "warn"
	Crit    Level = "crit"
	Unknown Level = "unknown"
)

// ExitCode is the Nagios plugin exit code of a level.
func ExitCode(l Level) int {
	switch l {
	case OK:
		return 0
	case Warn:
		return 1
	case Crit:
		return 2
	}
	return 3
}

// rank orders levels for the report's worst: crit beats unknown beats warn.
func rank(l Level) int {
	switch l {
	case OK:
		return 0
	case Warn:
		return 1
	case Unknown:
		return 2
	case Crit:
		return 3
	}
	return 2
}
