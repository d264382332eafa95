// Package writeapi serves the admin API's POST and PATCH endpoints: it
// decodes and validates the body, runs a command, and answers with the
// position the command reached (header X-Event-Position). It never writes
// a read model.
//
// It imports domain, auth, commands, httpapi and readapi (for rendering).
package writeapi
