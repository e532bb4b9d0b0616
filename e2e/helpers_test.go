package e2e

import "github.com/posedge/posedge/internal/testenv"

func testenvOpts() testenv.StoreOptions { return testenv.StoreOptions{} }

// SaleJSON is a valid one-line sale of item A1.
func SaleJSON() string {
	return `{"lines":[{"barcode":"A1","qty":1,"price_cents":100}],"total_cents":100,"tender":"cash"}`
}
