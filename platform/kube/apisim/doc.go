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
//     (client-go's WatchList, on by default);
//   - main-resource writes keep the status, status-subresource writes keep everything
//     but the status, and metadata.generation counts spec changes;
//   - JSON merge, JSON and (for built-in types) strategic merge patches;
//   - pod eviction honours PodDisruptionBudgets (429 while one selecting the pod
//     allows no disruption);
//   - errors are metav1.Status objects, so apierrors.IsNotFound and friends work.
//
// What it leaves out, on purpose: authentication and authorization, admission beyond
// the namespace's existence, defaulting, schema validation beyond decoding into the Go
// type, server-side apply, protobuf and CBOR (clients asking for them get JSON),
// finalizers and graceful deletion (deletes are immediate; deleting a namespace
// deletes its contents at once), and every controller (nothing computes a
// PodDisruptionBudget's status or schedules pods: the demo writes them).
package apisim
