// Package actors holds wraptool's running parts. Each actor is a struct whose
// inputs and outputs are channels of typed messages (package messages), with
// a Run(ctx) method that loops until ctx is done; serve adds every actor to
// one oklog/run group, so they start and stop together.
//
// Actors own their state and share nothing else, with one sanctioned
// exception: the policy holder publishes immutable snapshots (Published)
// that readers (tool handlers, the hub's auth check, the watcher, the
// request-log writer, the grants actor and the hook runner) load through an
// atomic pointer. Two tables are shared as values, not through messages,
// because every child start and every request consults them on its own
// goroutine: the reaper's table of processes and the hub's session table
// (Sessions), each guarded by its own lock; their Run only sweeps. Every send also selects on
// ctx.Done(), constructors start no goroutines, and a request that needs an
// answer carries its own buffered reply channel.
package actors
