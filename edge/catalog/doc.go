// Package catalog applies HQ's item master to the store: it watches the
// catalog bucket for this store's keys and _all, and resumes after outages.
package catalog
