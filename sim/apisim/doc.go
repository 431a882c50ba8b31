// Package apisim is a small in-memory Kubernetes API server for `mcotui demo`: it
// serves, over HTTP/JSON on a loopback listener, the resources mcotui's controller,
// agent and TUI use, so that their real code (typed clientsets, informers, listers,
// patches, status subresources, leader election on a Lease, kubectl's drain helper)
// runs unchanged against a simulated cluster inside the process.
//
// client-go's fake clientsets are not enough for that: their objects carry no
// resourceVersion, updates never conflict, field selectors are ignored and a watcher
// that falls behind panics. apisim keeps the API server's contract where mcotui's code
// depends on it:
//
//   - every write gets a new resourceVersion from one counter; an update or patch
//     carrying a stale one fails with 409 Conflict;
//   - list and watch filter by label selector and by field selector on metadata.name,
//     metadata.namespace and any simple dotted path (spec.nodeName);
//   - watch resumes after a resourceVersion from a bounded history, answers 410 Gone
//     when the history no longer reaches back that far, sends bookmarks when asked,
//     and streams initial events ending with the "k8s.io/initial-events-end" bookmark
//     (client-go's WatchList, on by default); bookmarks, when asked for, come every
//     BookmarkInterval and when the watch's timeout ends it;
//   - main-resource writes keep the status, status-subresource writes keep everything
//     but the status, and metadata.generation counts spec changes; a create sets no
//     status where a status subresource exists (but a Node's), a new Pod is Pending
//     and a new Namespace Active, so a demo sets pod phases and budget statuses through
//     the status subresource, as kubelets and controllers do;
//   - JSON merge, JSON and (for built-in types) strategic merge patches;
//   - pod eviction honours PodDisruptionBudgets as kube-apiserver does: a Running pod
//     selected by a budget is evicted only while the budget's status (observed at its
//     generation) allows a disruption, which the eviction uses up; otherwise 429;
//   - errors are metav1.Status objects, so apierrors.IsNotFound and friends work.
//
// Writes are serialized by one lock, as etcd's revisions are, and hand their event
// to each interested watcher without waiting: watchers selecting metadata.name are
// indexed by it, so a write to one Node reaches its agent's watcher and the watchers
// of all nodes, not the hundreds of other agents' (BenchmarkFanOut500,
// BenchmarkAgents300).
//
// What it leaves out, on purpose: authentication and authorization, admission beyond
// the namespace's existence, defaulting, schema validation beyond decoding into the Go
// type, server-side apply (415), dryRun (400), deletecollection (405), protobuf and
// CBOR (clients asking for them get JSON; a body in them is refused with 415),
// pagination (limit is ignored: a list is one page), list at an exact past
// resourceVersion (a list is always current), finalizers and graceful deletion
// (deletes are immediate; deleting a namespace deletes its contents at once), field
// ownership (managedFields records who wrote and when, not which fields), aggregated
// discovery (client-go falls back to the plain documents), and every controller
// (nothing computes a PodDisruptionBudget's status, runs or schedules pods, or
// collects garbage: the demo plays those parts).
package apisim
