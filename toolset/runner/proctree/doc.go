// Package proctree finds and kills what a call left behind where the
// kernel offers no child subreaper (macOS): the call's descendants, found
// by parent pid in the process table, and the members of its process group
// with their descendants.
//
// The logic is pure and runs the same on every system: Descendants walks a
// table, Kill signals a list after checking each pid against a fresh read,
// Sweep does both and freezes the tree before it kills. Only Table, the
// reader of the process table, differs per system (sysctl kern.proc.all on
// macOS, /proc on Linux, an error elsewhere), so Linux CI tests the same
// path macOS runs.
//
// Its limit: a descendant whose parent has already exited is re-parented to
// launchd (pid 1) and no longer leads back to the call, so no walk by parent
// pid can find it (unless it stayed in the call's process group, which the
// group kill ends anyway). A pid reused by an unrelated process between the
// read and the kill is never signalled: each victim carries its start time,
// and a fresh read just before the signal must show the same pid with the
// same start time.
//
// Concurrency: nothing is kept between calls; every function is safe for
// concurrent use.
package proctree
