// Package cents is the money arithmetic of posedge and posedge-hq: amounts
// are int64 cents, every product and sum is checked for overflow, and the
// amount rule of a transaction (prices, lines and total within the store's
// max_sale_cents, the lines summing to the total) is written once here, for
// the ledger that records a sale and for HQ that screens what it receives.
//
// Three bounds with three meanings live here, so that no caller confuses
// them: MaxItemPrice bounds an item master price, DefaultMaxSaleCents is
// max_sale_cents when the configuration says nothing, and
// MaxSaleCentsCeiling is the largest max_sale_cents either daemon accepts.
package cents
