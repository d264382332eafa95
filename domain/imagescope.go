package domain

import (
	"encoding/json"
	"strings"
)

// Image-operations API scopes, in catalogue order.
const (
	ImageScopeUsageRead   Scope = "usage:read"
	ImageScopeImagesRead  Scope = "images:read"
	ImageScopeImagesWrite Scope = "images:write"
)

var imageCatalogue = []Scope{ImageScopeUsageRead, ImageScopeImagesRead, ImageScopeImagesWrite}

// ImageScopeMutating reports whether a scope lets a key change anything
// (and spend AI credits).
func ImageScopeMutating(s Scope) bool { return s == ImageScopeImagesWrite || s == ScopeAll }

// ImageScopes is the stored scope state of an image-API key. Its three
// states are distinct (specification, rule 5):
//   - Recorded false: no scopes recorded (a key of the system before
//     scopes): unrestricted, keeps working unchanged;
//   - Recorded true and List empty: granted nothing (inert);
//   - Recorded true and a list: exactly those scopes.
type ImageScopes struct {
	Recorded bool
	List     []Scope
}

// MarshalJSON stores the states as null, [] and a list.
func (s ImageScopes) MarshalJSON() ([]byte, error) {
	if !s.Recorded {
		return []byte("null"), nil
	}
	if s.List == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.List)
}

// UnmarshalJSON reads null, [] and a list.
func (s *ImageScopes) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = ImageScopes{}
		return nil
	}
	var list []Scope
	if err := json.Unmarshal(b, &list); err != nil {
		return err
	}
	if list == nil {
		list = []Scope{}
	}
	*s = ImageScopes{Recorded: true, List: list}
	return nil
}

// DefaultImageScopes is what the mint form offers by default: read-only.
func DefaultImageScopes() []string {
	return []string{string(ImageScopeUsageRead), string(ImageScopeImagesRead)}
}

// ExpandImageScopes resolves a requested scope list at mint (rules 1, 3, 4):
// an unknown code is refused; images:write implies images:read; duplicates
// are removed; the result is in catalogue order; "*" collapses it to ["*"].
// An empty request gives an empty (inert) list.
func ExpandImageScopes(requested []string) ([]Scope, error) {
	set := map[Scope]bool{}
	for _, raw := range requested {
		s := Scope(strings.TrimSpace(raw))
		switch {
		case s == ScopeAll:
			return []Scope{ScopeAll}, nil
		case s == ImageScopeUsageRead || s == ImageScopeImagesRead:
			set[s] = true
		case s == ImageScopeImagesWrite:
			set[s] = true
			set[ImageScopeImagesRead] = true
		default:
			return nil, Invalid("scopes", "unknown image-API scope %q (usage:read, images:read, images:write, *)", raw)
		}
	}
	out := []Scope{}
	for _, c := range imageCatalogue {
		if set[c] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Allows checks a request's required scope against the stored state (rule
// 2): exact match against the stored list, no implication; "*" grants all;
// no recorded scopes grants all (legacy keys).
func (s ImageScopes) Allows(required Scope) bool {
	if !s.Recorded {
		return true
	}
	for _, g := range s.List {
		if g == required || g == ScopeAll {
			return true
		}
	}
	return false
}
