// Package store is the port of the object store that keeps the results of
// image operations: a blob per (shop, key), written whole or not at all,
// read back as a stream, erased with the shop, and swept once older than
// the retention (DefaultRetention unless configured). Adapters: localfs
// (files under the data directory's images/). The contract every adapter
// passes lives in store/storetest.
//
// It imports only the standard library and domain.
package store
