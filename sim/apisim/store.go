package apisim

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// collection holds the objects of one resource and its watchers.
type collection struct {
	res    *resource
	objs   map[string]*object // by key
	byName map[string]map[*watcher]struct{}
	others map[*watcher]struct{}
}

func key(namespace, name string) string { return namespace + "/" + name }

// change is one stored write, as watchers see it.
type change struct {
	typ watch.EventType
	col *collection
	obj *object // after; for DELETED the object as deleted, with the deletion's resourceVersion
	old *object // before; nil for ADDED
}

// frame is one event of a watch stream: its type and the object's JSON.
type frame struct {
	typ watch.EventType
	raw []byte
}

// watcher is one open watch. Writers never wait for it: a watcher whose buffer is full
// is dropped, its stream ends, and its client watches again from the last
// resourceVersion it saw (or relists, when the history no longer reaches back).
type watcher struct {
	col  *collection
	f    *filter
	ch   chan frame
	gone bool // dropped; ch is closed
}

// store is the whole cluster's state. One lock orders every write, as etcd's revision
// does: resourceVersions are one counter across all resources.
type store struct {
	clock   clock.PassiveClock
	bufSize int

	mu    sync.RWMutex
	rv    uint64
	cols  map[schema.GroupVersionResource]*collection
	group map[string][]*resource // by group, in order of versions served
	// history is a ring of the last writes, for watches resuming from a
	// resourceVersion; compacted is the newest resourceVersion no longer in it.
	history   []*change
	histNext  int
	histFull  bool
	compacted uint64
	closed    bool
}

func newStore(c clock.PassiveClock, history, buffer int) *store {
	s := &store{clock: c, bufSize: buffer, cols: map[schema.GroupVersionResource]*collection{},
		group: map[string][]*resource{}, history: make([]*change, history)}
	for _, r := range resources() {
		s.cols[r.gvr] = &collection{res: r, objs: map[string]*object{},
			byName: map[string]map[*watcher]struct{}{}, others: map[*watcher]struct{}{}}
		s.group[r.gvr.Group] = append(s.group[r.gvr.Group], r)
	}
	return s
}

// collection finds the served resource of a path.
func (s *store) collection(group, version, res string) (*collection, bool) {
	c, ok := s.cols[schema.GroupVersionResource{Group: group, Version: version, Resource: res}]
	return c, ok
}

func (s *store) now() string { return s.clock.Now().UTC().Format(time.RFC3339) }

// commit stores a write under s.mu: it numbers it, records it in the history and hands
// it to the watchers it concerns.
func (s *store) commit(c *change) {
	k := key(c.obj.namespace, c.obj.name)
	if c.typ == watch.Deleted {
		delete(c.col.objs, k)
	} else {
		c.col.objs[k] = c.obj
	}
	if len(s.history) > 0 {
		if old := s.history[s.histNext]; s.histFull && old != nil {
			s.compacted = old.obj.rv
		}
		s.history[s.histNext] = c
		s.histNext = (s.histNext + 1) % len(s.history)
		if s.histNext == 0 {
			s.histFull = true
		}
	} else {
		s.compacted = c.obj.rv
	}
	for w := range c.col.byName[c.obj.name] {
		s.deliver(w, c)
	}
	for w := range c.col.others {
		s.deliver(w, c)
	}
}

func (s *store) deliver(w *watcher, c *change) {
	typ := classify(w.f, c)
	if typ == "" {
		return
	}
	select {
	case w.ch <- frame{typ, c.obj.raw}:
	default:
		s.drop(w)
	}
}

// classify is the event a watcher with filter f sees for a change: an object that
// starts or stops matching is ADDED or DELETED, as kube-apiserver sends them; "" when
// the change is none of its business.
func classify(f *filter, c *change) watch.EventType {
	switch c.typ {
	case watch.Added:
		if f.matches(c.obj) {
			return watch.Added
		}
	case watch.Deleted:
		if f.matches(c.old) {
			return watch.Deleted
		}
	case watch.Modified:
		was, is := f.matches(c.old), f.matches(c.obj)
		switch {
		case was && is:
			return watch.Modified
		case is:
			return watch.Added
		case was:
			return watch.Deleted
		}
	}
	return ""
}

// drop removes a watcher under s.mu and ends its stream.
func (s *store) drop(w *watcher) {
	if w.gone {
		return
	}
	w.gone = true
	if w.f.name != "" {
		delete(w.col.byName[w.f.name], w)
		if len(w.col.byName[w.f.name]) == 0 {
			delete(w.col.byName, w.f.name)
		}
	} else {
		delete(w.col.others, w)
	}
	close(w.ch)
}

func (s *store) stopWatch(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drop(w)
}

// close ends every watch; later watches fail.
func (s *store) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.cols {
		for _, ws := range c.byName {
			for w := range ws {
				s.drop(w)
			}
		}
		for w := range c.others {
			s.drop(w)
		}
	}
}

func (s *store) get(c *collection, namespace, name string) (*object, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	o, ok := c.objs[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(c.res.groupResource(), name)
	}
	return o, nil
}

// list returns the objects f selects, sorted by namespace and name, and the
// resourceVersion they are current at.
func (s *store) list(c *collection, f *filter) ([]*object, uint64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.selectLocked(c, f), s.rv
}

func (s *store) selectLocked(c *collection, f *filter) []*object {
	var out []*object
	if f.name != "" && f.namespace != "" || f.name != "" && !c.res.namespaced {
		if o, ok := c.objs[key(f.namespace, f.name)]; ok && f.matches(o) {
			out = append(out, o)
		}
		return out
	}
	for _, o := range c.objs {
		if f.matches(o) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b *object) int {
		return strings.Compare(key(a.namespace, a.name), key(b.namespace, b.name))
	})
	return out
}

// watchOptions are a watch request's parameters.
type watchOptions struct {
	resourceVersion   string
	sendInitialEvents bool
	bookmarks         bool
}

// watch registers a watcher. It returns the frames to send before the live ones: the
// initial events or the history after the requested resourceVersion. A
// resourceVersion older than the history is answered, as kube-apiserver does, by an
// ERROR event carrying 410 Gone: the client then lists again.
func (s *store) watch(c *collection, f *filter, o watchOptions) (*watcher, []frame, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, apierrors.NewServiceUnavailable("the API server is shutting down")
	}
	var backlog []frame
	switch {
	case o.sendInitialEvents:
		if !o.bookmarks {
			return nil, nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "ListOptions"}, "",
				field.ErrorList{field.Forbidden(field.NewPath("allowWatchBookmarks"), "allowWatchBookmarks must be set to true when sendInitialEvents is set")})
		}
		for _, obj := range s.selectLocked(c, f) {
			backlog = append(backlog, frame{watch.Added, obj.raw})
		}
		backlog = append(backlog, frame{watch.Bookmark, bookmark(c.res, s.rv, true)})
	case o.resourceVersion == "":
	case o.resourceVersion == "0":
		for _, obj := range s.selectLocked(c, f) {
			backlog = append(backlog, frame{watch.Added, obj.raw})
		}
	default:
		rv, err := strconv.ParseUint(o.resourceVersion, 10, 64)
		switch {
		case err != nil:
			return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", o.resourceVersion))
		case rv > s.rv:
			err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, s.rv), 1)
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
			return nil, nil, err
		case rv < s.compacted:
			gone := apierrors.NewResourceExpired(fmt.Sprintf("too old resource version: %d (%d)", rv, s.compacted+1))
			st := gone.Status()
			st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
			raw, _ := json.Marshal(st)
			return nil, []frame{{watch.Error, raw}}, nil
		}
		for _, ch := range s.historySince(rv) {
			if ch.col != c {
				continue
			}
			if typ := classify(f, ch); typ != "" {
				backlog = append(backlog, frame{typ, ch.obj.raw})
			}
		}
	}
	w := &watcher{col: c, f: f, ch: make(chan frame, s.bufSize)}
	if f.name != "" {
		if c.byName[f.name] == nil {
			c.byName[f.name] = map[*watcher]struct{}{}
		}
		c.byName[f.name][w] = struct{}{}
	} else {
		c.others[w] = struct{}{}
	}
	return w, backlog, nil
}

// historySince returns the recorded writes after rv, oldest first.
func (s *store) historySince(rv uint64) []*change {
	var out []*change
	n := len(s.history)
	start := 0
	if s.histFull {
		start = s.histNext
	}
	for i := range n {
		ch := s.history[(start+i)%n]
		if ch == nil {
			break
		}
		if ch.obj.rv > rv {
			out = append(out, ch)
		}
	}
	return out
}

// queueBookmark queues a bookmark at the newest resourceVersion behind the events the
// watcher has been given, unless its buffer is full (a later one will do).
func (s *store) queueBookmark(w *watcher) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.gone {
		return
	}
	select {
	case w.ch <- frame{watch.Bookmark, bookmark(w.col.res, s.rv, false)}:
	default:
	}
}

// stopWatchAt stops a watcher and returns the resourceVersion it has been given
// every event up to, and false when it was dropped for falling behind (it has not).
func (s *store) stopWatchAt(w *watcher) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.gone {
		return 0, false
	}
	s.drop(w)
	return s.rv, true
}

// bookmark is the object of a BOOKMARK event: only a resourceVersion, and when it ends
// the initial events of a watch list, the annotation saying so.
func bookmark(r *resource, rv uint64, initialEventsEnd bool) []byte {
	md := map[string]any{"resourceVersion": strconv.FormatUint(rv, 10)}
	if initialEventsEnd {
		md["annotations"] = map[string]any{metav1.InitialEventsAnnotationKey: "true"}
	}
	raw, _ := json.Marshal(map[string]any{"apiVersion": r.apiVersion(), "kind": r.kind, "metadata": md})
	return raw
}

// writeMeta says who writes: the field manager recorded in managedFields.
type writeMeta struct {
	manager     string
	subresource string // "" or "status"
}

// create stores a new object decoded from a request to namespace (empty for a
// cluster-scoped resource).
func (s *store) create(c *collection, namespace string, m map[string]any, wm writeMeta) (*object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	md := metadata(m)
	if err := s.checkNamespace(c, namespace, md); err != nil {
		return nil, err
	}
	name, _ := md["name"].(string)
	if name == "" {
		gen, _ := md["generateName"].(string)
		if gen == "" {
			return nil, invalid(c.res, "", field.Required(field.NewPath("metadata", "name"), "name or generateName is required"))
		}
		for range 100 {
			name = gen + rand.String(5)
			if _, taken := c.objs[key(namespace, name)]; !taken {
				break
			}
		}
		md["name"] = name
	}
	if err := validName(c.res, name); err != nil {
		return nil, err
	}
	if _, exists := c.objs[key(namespace, name)]; exists {
		return nil, apierrors.NewAlreadyExists(c.res.groupResource(), name)
	}
	now := s.now()
	md["uid"] = string(uuid.NewUUID())
	md["creationTimestamp"] = now
	delete(md, "deletionTimestamp")
	delete(md, "deletionGracePeriodSeconds")
	if c.res.generation {
		md["generation"] = float64(1)
	} else {
		delete(md, "generation")
	}
	// As kube-apiserver's strategies do: a create sets no status where a status
	// subresource exists (a node's, which its kubelet registers with, excepted); a
	// namespace starts Active and a pod Pending.
	if c.res.status && c.res.gvr != nodesGVR {
		delete(m, "status")
	}
	switch c.res.gvr {
	case namespacesGVR:
		m["status"] = map[string]any{"phase": "Active"}
	case podsGVR:
		m["status"] = map[string]any{"phase": "Pending"}
	}
	md["managedFields"] = managedFields(nil, c.res, wm, now)
	s.rv++
	md["resourceVersion"] = strconv.FormatUint(s.rv, 10)
	obj, err := newObject(m)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	s.commit(&change{typ: watch.Added, col: c, obj: obj})
	return obj, nil
}

func (s *store) checkNamespace(c *collection, namespace string, md map[string]any) error {
	if !c.res.namespaced {
		delete(md, "namespace")
		return nil
	}
	if ns, _ := md["namespace"].(string); ns != "" && ns != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	md["namespace"] = namespace
	if _, ok := s.cols[namespacesGVR].objs[key("", namespace)]; !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, namespace)
	}
	return nil
}

func validName(r *resource, name string) error {
	msgs := validation.IsDNS1123Subdomain(name)
	if r.gvr.Resource == "namespaces" {
		msgs = validation.IsDNS1123Label(name)
	}
	if len(msgs) > 0 {
		return invalid(r, name, field.Invalid(field.NewPath("metadata", "name"), name, strings.Join(msgs, "; ")))
	}
	return nil
}

func invalid(r *resource, name string, errs ...*field.Error) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: r.gvr.Group, Kind: r.kind}, name, errs)
}

// update replaces an object with m, decoded from a request. A write to the main
// resource keeps the stored status; a write to the status subresource keeps
// everything but the status.
func (s *store) update(c *collection, namespace, name string, m map[string]any, wm writeMeta) (*object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.updateLocked(c, namespace, name, m, wm, false)
}

// updateLocked is update under s.mu. patched says m came from patching the stored
// object: its resourceVersion is then the stored one unless the patch set another.
func (s *store) updateLocked(c *collection, namespace, name string, m map[string]any, wm writeMeta, patched bool) (*object, error) {
	md := metadata(m)
	if n, _ := md["name"].(string); n != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", n, name))
	}
	if c.res.namespaced {
		if ns, _ := md["namespace"].(string); ns != "" && ns != namespace {
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	old, ok := c.objs[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(c.res.groupResource(), name)
	}
	oldMD := metadata(old.m)
	rv, _ := md["resourceVersion"].(string)
	switch {
	case rv == "" && !c.res.builtin && !patched:
		return nil, invalid(c.res, name, field.Invalid(field.NewPath("metadata", "resourceVersion"), rv, "must be specified for an update"))
	case rv != "" && rv != oldMD["resourceVersion"]:
		return nil, apierrors.NewConflict(c.res.groupResource(), name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}

	if wm.subresource == "status" {
		// Everything but the status from the stored object.
		status, hasStatus := m["status"]
		m = without(old.m)
		delete(m, "status")
		if hasStatus {
			m["status"] = status
		}
		md = without(oldMD)
		m["metadata"] = md
	} else {
		if c.res.status {
			if st, ok := old.m["status"]; ok {
				m["status"] = st
			} else {
				delete(m, "status")
			}
		}
		for _, k := range []string{"uid", "creationTimestamp", "namespace", "generation", "deletionTimestamp", "deletionGracePeriodSeconds"} {
			if v, ok := oldMD[k]; ok {
				md[k] = v
			} else {
				delete(md, k)
			}
		}
	}
	md["managedFields"] = oldMD["managedFields"]
	md["resourceVersion"] = oldMD["resourceVersion"]
	if sameExceptBookkeeping(m, old.m) {
		return old, nil
	}
	if c.res.generation && specChanged(c.res, old.m, m) {
		g, _ := oldMD["generation"].(float64)
		md["generation"] = g + 1
	}
	md["managedFields"] = managedFields(oldMD["managedFields"], c.res, wm, s.now())
	s.rv++
	md["resourceVersion"] = strconv.FormatUint(s.rv, 10)
	obj, err := newObject(m)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	s.commit(&change{typ: watch.Modified, col: c, obj: obj, old: old})
	return obj, nil
}

// specChanged says whether anything outside metadata (and status, for a resource with
// a status subresource) changed: what metadata.generation counts.
func specChanged(r *resource, a, b map[string]any) bool {
	skip := []string{"metadata"}
	if r.status {
		skip = append(skip, "status")
	}
	return !reflect.DeepEqual(without(a, skip...), without(b, skip...))
}

// managedFields records that manager wrote the object now, replacing its previous
// record of the same kind of write. Fields are not tracked, only who wrote when.
func managedFields(old any, r *resource, wm writeMeta, now string) []any {
	prev, _ := old.([]any)
	out := make([]any, 0, len(prev)+1)
	for _, e := range prev {
		em, _ := e.(map[string]any)
		if em["manager"] == wm.manager && em["operation"] == "Update" && (em["subresource"] == wm.subresource || em["subresource"] == nil && wm.subresource == "") {
			continue
		}
		out = append(out, e)
	}
	entry := map[string]any{"manager": wm.manager, "operation": "Update", "apiVersion": r.apiVersion(),
		"time": now, "fieldsType": "FieldsV1", "fieldsV1": map[string]any{}}
	if wm.subresource != "" {
		entry["subresource"] = wm.subresource
	}
	return append(out, entry)
}

// patch applies a patch of type patchType to the stored object and stores the result
// as update would.
func (s *store) patch(c *collection, namespace, name, patchType string, body []byte, wm writeMeta) (*object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := c.objs[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(c.res.groupResource(), name)
	}
	patchedJSON, err := applyPatch(c.res, patchType, old, body)
	if err != nil {
		return nil, err
	}
	m, err := c.res.decode(patchedJSON)
	if err != nil {
		return nil, err
	}
	return s.updateLocked(c, namespace, name, m, wm, true)
}

// preconditions are a delete's optional expectations.
type preconditions struct{ uid, resourceVersion string }

// delete removes an object at once; there is no graceful deletion and no finalizer.
// Deleting a namespace deletes everything in it first.
func (s *store) delete(c *collection, namespace, name string, pre preconditions) (*object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := c.objs[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(c.res.groupResource(), name)
	}
	md := metadata(old.m)
	if pre.uid != "" && pre.uid != md["uid"] {
		return nil, apierrors.NewConflict(c.res.groupResource(), name,
			//lint:ignore ST1005 kube-apiserver's words
			fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %v", pre.uid, md["uid"]))
	}
	if pre.resourceVersion != "" && pre.resourceVersion != md["resourceVersion"] {
		return nil, apierrors.NewConflict(c.res.groupResource(), name,
			//lint:ignore ST1005 kube-apiserver's words
			fmt.Errorf("Precondition failed: ResourceVersion in precondition: %s, ResourceVersion in object meta: %v", pre.resourceVersion, md["resourceVersion"]))
	}
	if c.res.gvr == namespacesGVR {
		for _, other := range s.cols {
			if !other.res.namespaced {
				continue
			}
			for _, o := range s.selectLocked(other, &filter{namespace: name, labels: labels.Everything()}) {
				if err := s.deleteLocked(other, o); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := s.deleteLocked(c, old); err != nil {
		return nil, err
	}
	return old, nil
}

func (s *store) deleteLocked(c *collection, old *object) error {
	s.rv++
	m := without(old.m)
	md := without(metadata(old.m))
	md["resourceVersion"] = strconv.FormatUint(s.rv, 10)
	m["metadata"] = md
	obj, err := newObject(m)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	s.commit(&change{typ: watch.Deleted, col: c, obj: obj, old: old})
	return nil
}
