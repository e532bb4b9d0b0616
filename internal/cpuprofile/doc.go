// Package cpuprofile is the --cpuprofile flag of posedge run and posedge-hq run: a pprof CPU profile of the
// whole process into a file, written when the command ends (SIGTERM), for finding where a live daemon's CPU goes.
package cpuprofile
