package hq

import (
	"runtime"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// decodeResult is one pulled message decoded, checked and screened, or
// the reason it can never be stored.
type decodeResult struct {
	msg hqdb.Msg
	err error
}

// minParallelDecode is the smallest batch decoded on more than one core:
// below it, starting the goroutines costs more than the decoding they
// share.
const minParallelDecode = 64

// decodeBatch decodes batch in order, on as many cores as the process
// has (issue 26: at chain scale decoding was most of posedge-hq's CPU),
// each message once: DecodeMsg's one pass refuses duplicate keys, keys
// in another case and out-of-bound money as before.
func decodeBatch(batch []jetstream.Msg, prefix string, maxCents int64, now time.Time) []decodeResult {
	out := make([]decodeResult, len(batch))
	one := func(i int) {
		jm := batch[i]
		m, err := DecodeMsg(prefix, jm.Subject(), jm.Headers().Get(wire.HeaderSchema), jm.Data(), now)
		if err == nil {
			err = CheckMsgID(m, jm.Headers().Get(wire.HeaderMsgID))
		}
		if err == nil {
			Screen(&m, maxCents)
		}
		out[i] = decodeResult{m, err}
	}
	workers := min(runtime.GOMAXPROCS(0), len(batch)/(minParallelDecode/2))
	if workers < 2 {
		for i := range batch {
			one(i)
		}
		return out
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
	return out
}
