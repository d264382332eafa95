// Package openapitest checks the service against its OpenAPI document: that
// the router and the document list the same operations (CheckRoutes), and
// that real responses match the document (ValidateResponse), using
// kin-openapi's openapi3filter. Use it from tests only.
//
// kin-openapi v0.152 reads OpenAPI 3.1 natively: type arrays such as
// ["string", "null"], `examples` in schemas, the license `identifier` and
// role names in the security requirements of non-OAuth schemes load and
// validate, and examples are checked against their schemas. For a 3.1
// document openapi3filter turns on its JSON Schema 2020-12 mode; schemas
// that use $ref and no 2020-only keyword (const, prefixItems, if/then,
// unevaluated*, $defs, …) fall back to its built-in validator, which
// understands type arrays too. The document is therefore plain 3.1 with no
// 3.0 workaround (no `nullable`); it uses enum rather than const, so every
// schema is validated the same way.
//
// It imports the standard library, openapi, gorilla/mux and kin-openapi.
package openapitest
