package lua

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv"
)

func startRedis(t *testing.T) *redis.Client {
	t.Helper()
	return testenv.StartRedisSingle(t).NodeClient(0)
}
