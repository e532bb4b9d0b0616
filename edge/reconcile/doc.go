// Package reconcile checks Redis's counters and stock against the journal
// (the source of truth) under a fenced store-wide lock, corrects Redis,
// and watches the continuity of the normal-mode flow sequence.
package reconcile
