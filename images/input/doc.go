// Package input reads the image of one image-operation request as the API
// receives it: either the body is the image, sent with its Content-Type
// (image/png, image/jpeg or image/webp) and the options as query
// parameters, or the body is multipart/form-data with an "image" part and
// the options as the other fields.
//
// Parse enforces the limits before any pixel is decoded: it stops reading at
// the byte limit (413 payload_too_large), sniffs the format from the bytes
// and refuses a declared type that does not match (415
// unsupported_media_type), and reads only the image header to learn its
// dimensions, refusing more pixels than the limit (422 naming "image"). A
// full decode of an accepted image is therefore bounded in memory: a
// decompression bomb (a small file that claims a huge canvas) is refused
// from its header alone.
//
// Errors are *httpapi.Error (413, 415) or *domain.Error (422 with the
// field), which httpapi.WriteError maps to the service's error envelope.
//
// It imports the standard library, domain, httpapi (for its error
// constructors only) and golang.org/x/image/webp.
package input
