// Package idempotency implements the Idempotency-Key contract of the admin
// API's writes (POST and PATCH): the Store port that claims a key
// atomically, even across servers sharing the store, and remembers the
// response for the idempotency window; and the HTTP Middleware that parses
// the header, fingerprints the request, replays stored responses and maps
// every outcome to the error envelope.
//
// The rules it owns:
//
//   - Keys are scoped: the caller supplies the scope (the token id), so two
//     tokens never see each other's keys.
//   - The fingerprint is the method, the path with its query, and the
//     SHA-256 of the raw body (Fingerprint).
//   - The window is 24 hours from the first request (DefaultWindow).
//   - Same key, same fingerprint, response stored: the response is replayed
//     (status, the headers listed in Options.ReplayHeaders, body) with
//     Idempotent-Replayed: true, and the handler does not run.
//   - Same key, different fingerprint, within the window: 409
//     idempotency_key_reused, whether the first request finished or not.
//   - Same key while the first request still runs: 409
//     idempotency_key_in_use.
//   - Which responses are stored is DefaultStorable: 2xx, 3xx, and 409
//     conflicts of the resource. Every other status (400, 401, 402, 403,
//     404, 405, 413, 415, 422, 429 — the request failed before any work —
//     and every 5xx, so that the client can retry) is not stored and the
//     key is released; so is a response larger than
//     Options.MaxResponseBytes, which is streamed to the client unstored.
//   - A claim in progress holds a lease (DefaultLease, 60 s): when the
//     server running it dies, another may take the key over once the lease
//     has passed. A slow first request whose lease was taken over cannot
//     store its response any more (ErrClaimLost): the owner token of a
//     claim fences it.
//
// Adapters: idempotency/sqlite (embedded, a file shared by processes) and
// idempotency/redis; both pass the contract suite idempotency/idempotencytest.
//
// It imports the standard library and httpapi (the error envelope, the
// request logger). It never logs an Idempotency-Key or a body.
package idempotency
