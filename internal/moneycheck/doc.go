// Package moneycheck is a history checker for a store's money, in the spirit
// of Jepsen's Elle: simulated tills record every request they made (the
// intent) and every answer they got, and Check decides from that history,
// the initial stock and what is read at the end (HQ's rows, Redis stock, the
// daemon's daily stats) alone whether the daemon kept its promises. It knows
// nothing of the daemon's internals, so it can be used as the oracle of
// fault tests instead of the daemon's own answers.
//
// An operation whose answer was lost (timeout, 5xx, connection reset) is
// indeterminate: it may or may not have happened, and the checker accepts
// either, but only once, and only if HQ's row for it matches its intent.
package moneycheck
