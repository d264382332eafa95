// Package localfs is the store.Store adapter on local files: one directory
// per shop under a root (the data directory's images/), one file per key.
// Directories are 0700 and files 0600; a blob is written to a temporary
// file under the root's .tmp/, synced, and renamed into place, so a reader
// never sees part of one. A blob's modification time is the time it was
// stored (from the injected clock), which Sweep compares.
//
// It imports the standard library, domain and images/store.
package localfs
