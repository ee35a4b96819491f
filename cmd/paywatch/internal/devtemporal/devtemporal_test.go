package devtemporal

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/server/common/dynamicconfig"
)

func TestHistoryCacheSize(t *testing.T) {
	key := dynamicconfig.HistoryCacheHostLevelMaxSize.Key()
	_, set := dynamicConfig(Options{})[key]
	assert.False(t, set, "0 keeps the server's default")
	assert.Equal(t, 2500, dynamicConfig(Options{HistoryCacheSize: 2500})[key])
}
