// Package auth authenticates admin API calls (bearer tokens copt_…) and
// checks each endpoint's scope. The token lookup is a port (Finder) served
// by the tenancy read model. Only the SHA-256 of a token is ever looked up
// or compared, in constant time; tokens are never logged.
//
// It imports domain and httpapi.
package auth
