package agent

import (
	"context"
	"fmt"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	corev1 "k8s.io/api/core/v1"

	"github.com/mcotui/mcotui/core/nodeanno"
	"github.com/mcotui/mcotui/core/phase"
	"github.com/mcotui/mcotui/platform/host"
)

// The drift monitor watches the files the node's current config manages (files, unit
// files, drop-ins, the core user's keys) through fsnotify on their directories. A file
// changed by hand puts the node in Degraded with a message naming the file and what
// differs; putting the file back clears it. It runs only while no update does: an
// update's own writes are not drift.
//
// fsnotify watches directories, not files, because a file replaced by rename (every
// editor, and the agent itself) is a new inode a file watch would lose. A full recheck
// runs every driftRecheck as well, for directories created or removed under the watch.

const (
	// driftSettle lets a burst of events (an editor's write, rename and chmod) end
	// before the files are checked.
	driftSettle  = 100 * time.Millisecond
	driftRecheck = time.Minute
)

type driftMonitor struct {
	config string
	files  map[string]hostFile
	// watched maps each watched directory, as the agent's filesystem names it, to the
	// host's name for it: they differ where a link on the way was resolved in the root.
	watched map[string]string

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	current []Mismatch // as last reported
}

// startDrift makes sure the monitor watches config and reports whether the node has
// drifted from it now.
func (a *Agent) startDrift(ctx context.Context, config string) (bool, error) {
	a.driftMu.Lock()
	defer a.driftMu.Unlock()
	if m := a.drift; m != nil && m.config == config {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.current) > 0, nil
	}
	a.stopDriftLocked()
	cfg, err := a.config(ctx, config)
	if err != nil {
		return false, err
	}
	files, err := a.ap.expectedFiles(cfg)
	if err != nil {
		return false, fmt.Errorf("drift monitor for %s: %w", config, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return false, fmt.Errorf("drift monitor: %w", err)
	}
	watched := watchDirs(a.cfg.Root, files)
	for dir := range watched {
		if err := w.Add(dir); err != nil {
			a.log.Warn("drift monitor cannot watch a directory; it is rechecked every minute", "dir", dir, "err", err)
		}
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m := &driftMonitor{config: config, files: files, watched: watched, cancel: cancel, done: make(chan struct{})}
	a.drift = m
	ms := a.checkDrift(m, sortedKeys(files))
	a.reportDrift(mctx, m, ms)
	go a.watchDrift(mctx, m, w)
	// Stop with the caller's context too.
	go func() {
		select {
		case <-ctx.Done():
			cancel()
		case <-mctx.Done():
		}
	}()
	return len(ms) > 0, nil
}

func (a *Agent) stopDrift() {
	a.driftMu.Lock()
	defer a.driftMu.Unlock()
	a.stopDriftLocked()
}

func (a *Agent) stopDriftLocked() {
	if a.drift == nil {
		return
	}
	a.drift.cancel()
	<-a.drift.done
	a.drift = nil
}

// watchDirs is the directory of each managed file, or its nearest existing ancestor,
// resolved inside the root (/home is var/home on ostree hosts, and an absolute link
// followed by inotify would be taken from the agent's own root, not the host's), mapped
// to the host's name for it.
func watchDirs(root *host.Root, files map[string]hostFile) map[string]string {
	dirs := map[string]string{}
	for p := range files {
		for d := path.Dir(p); ; d = path.Dir(d) {
			if at, err := root.ResolveDir(d); err == nil {
				dirs[at] = d
				break
			}
			if d == "/" {
				break
			}
		}
	}
	return dirs
}

func (a *Agent) watchDrift(ctx context.Context, m *driftMonitor, w *fsnotify.Watcher) {
	defer close(m.done)
	defer w.Close()
	recheck := time.NewTicker(driftRecheck)
	defer recheck.Stop()
	var settle <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if a.managedEvent(m, ev.Name) && settle == nil {
				settle = time.After(driftSettle)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			a.log.Warn("drift monitor", "err", err)
		case <-settle:
			settle = nil
			a.reportDrift(ctx, m, a.checkDrift(m, sortedKeys(m.files)))
		case <-recheck.C:
			a.reportDrift(ctx, m, a.checkDrift(m, sortedKeys(m.files)))
		}
	}
}

// managedEvent reports whether an event on the agent's filesystem is about a managed
// file, or a directory on the way to one.
func (a *Agent) managedEvent(m *driftMonitor, name string) bool {
	// An event names the watched directory's entry, or the directory itself.
	p, ok := m.watched[name]
	if !ok {
		dir, watched := m.watched[filepath.Dir(name)]
		if !watched {
			return false
		}
		p = path.Join(dir, filepath.Base(name))
	}
	if _, ok := m.files[p]; ok {
		return true
	}
	for f := range m.files {
		if len(f) > len(p) && f[:len(p)] == p && (p == "/" || f[len(p)] == '/') {
			return true
		}
	}
	return false
}

func (a *Agent) checkDrift(m *driftMonitor, paths []string) []Mismatch {
	var out []Mismatch
	for _, p := range paths {
		if mm := a.ap.checkFile(m.files[p]); mm != nil {
			out = append(out, *mm)
		}
	}
	return out
}

// reportDrift tells the cluster when the set of differences changes.
func (a *Agent) reportDrift(ctx context.Context, m *driftMonitor, ms []Mismatch) {
	m.mu.Lock()
	same := describeMismatches(ms) == describeMismatches(m.current)
	was := len(m.current) > 0
	m.current = ms
	m.mu.Unlock()
	if same {
		return
	}
	a.cfg.Metrics.setDrift(len(ms) > 0)
	if len(ms) > 0 {
		err := fmt.Errorf("unexpected on-disk state validating against %s: %s", m.config, describeMismatches(ms))
		a.log.Warn("config drift", "err", err)
		a.cfg.Cluster.Event(corev1.EventTypeWarning, "ConfigDriftDetected", err.Error())
		// The condition first, the annotation (which summarises it) last.
		_ = a.cfg.Cluster.SetConditions(ctx, m.config, phase.Degraded(a.cfg.Node, err))
		_ = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateDegraded, nodeanno.ReasonKey: truncateReason(err.Error())})
		return
	}
	if was {
		a.log.Info("config drift cleared", "config", m.config)
		a.cfg.Cluster.Event(corev1.EventTypeNormal, "ConfigDriftResolved", "The managed files match "+m.config+" again")
		_ = a.cfg.Cluster.SetConditions(ctx, m.config, phase.NotDegraded(a.cfg.Node))
		_ = a.cfg.Cluster.Annotate(ctx, map[string]string{nodeanno.StateKey: nodeanno.StateDone, nodeanno.ReasonKey: ""})
	}
}
