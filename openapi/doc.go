// Package openapi owns the service's OpenAPI 3.1 document (openapi.yaml,
// embedded) and serves it as JSON at GET /api/v1/openapi.json. The document
// describes what the service implements; openapi/openapitest checks that the
// router and the document agree and validates real responses against it.
//
// It imports the standard library and github.com/oasdiff/yaml (YAML to JSON)
// only.
package openapi
