package ledger

import "time"

// DefaultWaitTimeout is redis.wait_timeout when the configuration does not
// set it: how long a money write waits for replicas (WAIT 0 would block
// for ever). edge/config takes it from here.
const DefaultWaitTimeout = 100 * time.Millisecond
