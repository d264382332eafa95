package sms

import "unicode/utf8"

// Segment sizes of 3GPP TS 23.038/23.040: a single message holds 160
// GSM-7 septets or 70 UCS-2 code units; a concatenated one spends a user
// data header on each part, leaving 153 septets or 67 code units.
const (
	gsmSingle  = 160
	gsmPart    = 153
	ucs2Single = 70
	ucs2Part   = 67
)

// gsmBasic is the GSM 03.38 default alphabet (one septet each), without
// the escape code itself.
const gsmBasic = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?" +
	"¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"

// gsmExtension is the default alphabet's extension table: each costs two
// septets (the escape and the character).
const gsmExtension = "\f^{}\\[~]|€"

var gsmSeptets = func() map[rune]int {
	m := make(map[rune]int, 140)
	for _, r := range gsmBasic {
		m[r] = 1
	}
	for _, r := range gsmExtension {
		m[r] = 2
	}
	return m
}()

// IsGSM7 reports whether text can be sent in the GSM 7-bit default
// alphabet (with its extension table); otherwise it goes as UCS-2.
func IsGSM7(text string) bool {
	for _, r := range text {
		if gsmSeptets[r] == 0 {
			return false
		}
	}
	return true
}

// Segments returns how many SMS parts text takes: GSM-7 when every
// character is in the default alphabet or its extension (which costs two
// septets), else UCS-2 (characters outside the Basic Multilingual Plane,
// such as most emoji, cost two code units). A text longer than one part
// is split in parts of 153 septets or 67 code units, never splitting an
// escape pair or a surrogate pair. The empty text takes 0. Invalid UTF-8
// bytes count as one UCS-2 unit each (the replacement character).
func Segments(text string) int {
	if text == "" {
		return 0
	}
	if IsGSM7(text) {
		return count(text, gsmSingle, gsmPart, func(r rune) int { return gsmSeptets[r] })
	}
	return count(text, ucs2Single, ucs2Part, func(r rune) int { return utf8.RuneLen(r)/4 + 1 })
}

// count sums the characters' sizes; when the total exceeds single, it
// packs them greedily into parts of part units, a character that does
// not fit starting the next part.
func count(text string, single, part int, size func(rune) int) int {
	total := 0
	for _, r := range text {
		total += size(r)
	}
	if total <= single {
		return 1
	}
	parts, used := 1, 0
	for _, r := range text {
		n := size(r)
		if used+n > part {
			parts++
			used = 0
		}
		used += n
	}
	return parts
}
