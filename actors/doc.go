// Package actors holds wraptool's running parts. Each actor is a struct whose
// inputs and outputs are channels of typed messages (package messages), with
// a Run(ctx) method that loops until ctx is done; serve adds every actor to
// one oklog/run group, so they start and stop together.
//
// Actors own their state and share nothing else, with one sanctioned
// exception: the policy holder publishes immutable snapshots that readers
// (tool handlers, the hub's auth check, the watcher, the request-log
// writer, the grants actor and the hook runner) load through an atomic
// pointer. Every send also selects on
// ctx.Done(), constructors start no goroutines, and a request that needs an
// answer carries its own buffered reply channel.
package actors
