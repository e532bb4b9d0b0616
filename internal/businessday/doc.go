// Package businessday is the store's business day (YYYYMMDD) and hour:
// the one definition the edge daemon, its journal, the replay and HQ share.
package businessday
