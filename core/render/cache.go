package render

import (
	"crypto/sha256"
	"sync"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/mcotui/mcotui/core/ignconfig"
)

// cacheGeneration is how many sources a Cache holds before it forgets those it has not
// been asked for since the last time it filled up: a generational cache, so that what
// every render asks for stays and what no render asks for any more goes.
const cacheGeneration = 4096

// Cache remembers each source MachineConfig's parsed and validated Ignition config by
// the SHA-256 of its raw bytes, so that rendering a pool again after one of its
// MachineConfigs changed parses and validates only that one. Parsing with Ignition's
// validation is most of a render's time (200 MachineConfigs with 5,000 files: about
// half). A Cache is safe for concurrent use; the zero value is not usable, see
// NewCache. Its Render gives exactly Render's result.
type Cache struct {
	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]types.Config
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{cur: map[[sha256.Size]byte]types.Config{}}
}

// Render is Render, with the sources' parses from the cache.
func (c *Cache) Render(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig) (*Rendered, error) {
	return render(pool, mcs, c.parse)
}

// parse is ignconfig.Parse of a valid config, from the cache when it has it. Broken
// configs are not cached: their reports are needed in full, and they are rare.
//
// The config handed out is shared by every render that asks for it; the merge only
// reads its inputs (folder copies the items it keeps, and Ignition's merge builds a
// new result), so sharing is safe. TestCacheRendersAsRender checks it.
func (c *Cache) parse(raw []byte) (types.Config, report.Report, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	cfg, ok := c.cur[key]
	if !ok {
		if cfg, ok = c.old[key]; ok {
			c.put(key, cfg)
		}
	}
	c.mu.Unlock()
	if ok {
		return cfg, report.Report{}, nil
	}
	cfg, rpt, err := ignconfig.Parse(raw)
	if err != nil {
		return cfg, rpt, err
	}
	c.mu.Lock()
	c.put(key, cfg)
	c.mu.Unlock()
	return cfg, rpt, nil
}

func (c *Cache) put(key [sha256.Size]byte, cfg types.Config) {
	if len(c.cur) >= cacheGeneration {
		c.old, c.cur = c.cur, map[[sha256.Size]byte]types.Config{}
	}
	c.cur[key] = cfg
}
