// Package writeapi serves the admin API's POST and PATCH endpoints: it
// decodes and validates the body, runs a command, and answers with the
// position the command reached (header X-Event-Position). It never writes
// a read model.
//
// The order actions (orderactions.go) and the product pushes act on the
// commerce platform through the Platform port (platform sessions and
// platformapi calls), which app implements.
//
// It imports domain, auth, commands, httpapi, platform, platformapi and
// readapi (for rendering).
package writeapi
