// Command racy writes one variable from two goroutines without a lock:
// built with -race it prints the race detector's report, built plain it
// prints nothing (proc_test.go).
package main

import (
	"fmt"
	"sync"
)

func main() {
	n := 0
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); n++ }()
	}
	wg.Wait()
	fmt.Println("done", n)
}
