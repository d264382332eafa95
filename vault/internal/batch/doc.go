// Package batch owns a group-commit queue: callers hand a Batcher their
// requests one at a time with Do, and one goroutine of its own takes
// whatever is queued (up to a bound, oldest first) and stores it with one
// call to a commit function the adapter supplies, then answers each caller.
// The vault adapters use it to create many data keys per transaction.
//
// The Batcher honours each caller's ctx (a caller whose ctx ends returns
// at once; a request whose caller has gone before its batch starts is
// dropped) and Close (it answers everything queued, then the goroutine
// returns).
//
// It imports the standard library only.
package batch
