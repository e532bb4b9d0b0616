package hq

import (
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// minParallelDecode is the smallest batch decoded on more than one core:
// below it, starting the goroutines costs more than the decoding they
// share.
const minParallelDecode = 64

// decodeBatch decodes batch in order into msgs, the reason a message
// can never be stored into errs (both len(batch) long), on as many
// cores as the process has (issue 26: at chain scale decoding was most
// of posedge-hq's CPU), each message once: DecodeMsg's one pass refuses
// duplicate keys, keys in another case and out-of-bound money as before.
// It writes into the caller's slices rather than returning its own, as
// a hqdb.Msg is ~500 bytes: a batch is allocated and copied once.
func decodeBatch(batch []jetstream.Msg, prefix string, maxCents int64, now time.Time, msgs []hqdb.Msg, errs []error) {
	one := func(i int) {
		jm := batch[i]
		m := &msgs[i]
		var err error
		*m, err = DecodeMsg(prefix, jm.Subject(), jm.Headers().Get(wire.HeaderSchema), jm.Data(), now)
		if err == nil {
			err = CheckMsgID(*m, jm.Headers().Get(wire.HeaderMsgID))
		}
		if err == nil {
			Screen(m, maxCents)
		}
		errs[i] = err
	}
	workers := min(runtime.GOMAXPROCS(0), len(batch)/(minParallelDecode/2))
	if workers < 2 {
		for i := range batch {
			one(i)
		}
		return
	}
	var wg sync.WaitGroup
	per := (len(batch) + workers - 1) / workers
	for lo := 0; lo < len(batch); lo += per {
		hi := min(lo+per, len(batch))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				one(i)
			}
		})
	}
	wg.Wait()
}
