// Package replay rebuilds read models from the event log into a new version
// beside the live one, then switches to it.
//
// Versions are SQLite files of the data directory: the live one is named by
// the pointer file readmodels.current (readmodels.db when there is none). A
// replay builds readmodels-<time>.db from position 0 for the projectors it
// rebuilds (copying the rows and checkpoints of the others from a snapshot
// of the live version), catches every projector up with the head of the
// log, makes the file durable, then points readmodels.current at it (an
// atomic rename) and deletes the old version. A running server polls the
// pointer and moves to the new version without a restart
// (projections.Runtime.Reload with readmodel/sqlite's Store.Switch): its
// queries go on being answered during the whole replay.
//
// A replay is resumable: its state (target file, projectors, source
// version) is kept in replay.json, and a replay started again with the same
// projectors continues from the target's checkpoints. One replay runs at a
// time per data directory (an advisory lock on replay.lock).
package replay
