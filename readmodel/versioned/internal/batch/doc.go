// Package batch queues the rows written to a versioned store, cuts them
// into batches per table (by size and by age), sends them through a
// Sender, and works out how far each projector's checkpoint may move: to
// the highest position whose rows, and those of every earlier write of
// the projector, were all sent. Both adapters of readmodel/versioned use
// it. It imports the standard library and readmodel/versioned.
package batch
