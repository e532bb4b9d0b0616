// Command hqcount prints how many transactions a posedge-hq SQLite
// database holds and their net amount, opening it read-only (posedge-hq
// may keep running). Used by scripts/demo.sh:
//
//	go run ./scripts/hqcount .demo/hq.db
package main

import (
	"database/sql"
	"fmt"
	"os"

	_ "modernc.org/sqlite"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: hqcount HQ.DB")
		os.Exit(2)
	}
	n, cents, err := count(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "hqcount: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	fmt.Printf("transactions %d\nnet_cents %d\n", n, cents)
}

// count reads the number of rows and the sales minus refunds in cents.
func count(path string) (n, cents int64, err error) {
	if _, err := os.Stat(path); err != nil {
		return 0, 0, err
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	err = db.QueryRow(`SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN kind = 'refund' THEN -total_cents ELSE total_cents END), 0)
		FROM transactions`).Scan(&n, &cents)
	return n, cents, err
}
