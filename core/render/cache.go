package render

import (
	"crypto/sha256"
	"sync"

	"github.com/coreos/ignition/v2/config/v3_5/types"
	"github.com/coreos/vcontext/report"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// cacheGeneration is how many sources a Cache holds before it forgets those it has not
// been asked for since the last time it filled up: a generational cache, so that what
// every render asks for stays and what no render asks for any more goes.
const cacheGeneration = 4096

// itemGeneration is cacheGeneration for the items of rendered configs (see
// renderer): a pool's config alone may hold thousands of files, and a generation that
// did not hold every item of a render would forget each one before the next render
// asked for it again.
const itemGeneration = 1 << 15

// Cache remembers each source MachineConfig's parsed and validated Ignition config by
// the SHA-256 of its raw bytes, so that rendering a pool again after one of its
// MachineConfigs changed parses and validates only that one. Parsing with Ignition's
// validation is most of a render's time (200 MachineConfigs with 5,000 files: about
// half). A Cache is safe for concurrent use; the zero value is not usable, see
// NewCache. Its Render gives exactly Render's result.
//
// It also remembers, for each storage file and systemd unit of the configs it rendered,
// whether Ignition's validation of it alone failed and its YAML in the rendered
// config's name hash, so that the merged config is validated and named from its new
// items alone (see renderer): the other half of such a render's time.
type Cache struct {
	mu       sync.Mutex
	cur, old map[[sha256.Size]byte]parsedSource

	itemMu             sync.Mutex
	curItems, oldItems map[string]*itemInfo // by kind and JSON
}

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{cur: map[[sha256.Size]byte]parsedSource{}, curItems: map[string]*itemInfo{}}
}

// Render is Render, with the sources' parses, and what is known of the merged
// config's items, from the cache.
func (c *Cache) Render(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig) (*Rendered, error) {
	return render(pool, mcs, &renderer{parse: c.parse, items: c}, nil)
}

// RenderStream is RenderStream, with the cache.
func (c *Cache) RenderStream(pool *mcfgv1.MachineConfigPool, mcs []*mcfgv1.MachineConfig, stream *mcfgv1.OSImageStreamSet) (*Rendered, error) {
	return render(pool, mcs, &renderer{parse: c.parse, items: c}, stream)
}

// item is what the cache knows of the item of kind whose JSON is js, or nil.
func (c *Cache) item(kind byte, js []byte) *itemInfo {
	key := string(append([]byte{kind}, js...))
	c.itemMu.Lock()
	defer c.itemMu.Unlock()
	info, ok := c.curItems[key]
	if !ok {
		if info, ok = c.oldItems[key]; ok {
			c.putItemLocked(key, info)
		}
	}
	return info
}

func (c *Cache) putItem(kind byte, js []byte, info *itemInfo) {
	key := string(append([]byte{kind}, js...))
	c.itemMu.Lock()
	defer c.itemMu.Unlock()
	c.putItemLocked(key, info)
}

func (c *Cache) putItemLocked(key string, info *itemInfo) {
	if len(c.curItems) >= itemGeneration {
		c.oldItems, c.curItems = c.curItems, map[string]*itemInfo{}
	}
	c.curItems[key] = info
}

// parsedSource is a valid source's config, and whether the agent refuses it.
type parsedSource struct {
	cfg     types.Config
	refused error
}

// parse is parseSource of a valid config, from the cache when it has it. Broken
// configs are not cached: their reports are needed in full, and they are rare.
//
// The config handed out is shared by every render that asks for it; the merge only
// reads its inputs (folder copies the items it keeps, and Ignition's merge builds a
// new result), so sharing is safe. TestCacheRendersAsRender checks it.
func (c *Cache) parse(raw []byte) (types.Config, report.Report, error, error) {
	key := sha256.Sum256(raw)
	c.mu.Lock()
	p, ok := c.cur[key]
	if !ok {
		if p, ok = c.old[key]; ok {
			c.put(key, p)
		}
	}
	c.mu.Unlock()
	if ok {
		return p.cfg, report.Report{}, nil, p.refused
	}
	cfg, rpt, err, refused := parseSource(raw)
	if err != nil {
		return cfg, rpt, err, nil
	}
	c.mu.Lock()
	c.put(key, parsedSource{cfg: cfg, refused: refused})
	c.mu.Unlock()
	return cfg, rpt, nil, refused
}

func (c *Cache) put(key [sha256.Size]byte, p parsedSource) {
	if len(c.cur) >= cacheGeneration {
		c.old, c.cur = c.cur, map[[sha256.Size]byte]parsedSource{}
	}
	c.cur[key] = p
}
