// Package hqdb is what posedge-hq's databases share: the Store
// interface the receiver and the admin API write and read through, the
// messages and outcomes it takes and gives, and the parts of a batch's
// bookkeeping (store and day deltas, the day-total overflow guard, the
// fleet view's assembly) and of its SQL that are the same on every
// backend. Each backend lives in a package of its own beside this one
// (sqlite, postgres), as Litestream keeps one package per replica type;
// the contract suite in sync/hq (TestStore) runs over both.
package hqdb
