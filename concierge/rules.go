package concierge

import (
	"errors"
	"math"
	"strings"
	"unicode"
)

// Escalation reasons: why a conversation goes to the human queue.
const (
	// ReasonKeyword: the inbound text has one of Rules.Keywords.
	ReasonKeyword = "keyword"
	// ReasonMerchantKeyword: the inbound text has one of the merchant's
	// own Rules.MerchantKeywords.
	ReasonMerchantKeyword = "merchant_keyword"
	// ReasonLowConfidence: the answer's confidence is below
	// Rules.Threshold.
	ReasonLowConfidence = "low_confidence"
	// ReasonRepeatedUnanswered: the concierge could not answer
	// Rules.MaxUnanswered questions in a row.
	ReasonRepeatedUnanswered = "repeated_unanswered"
	// ReasonInvalidOutput: the provider's model returned something that
	// is not a usable answer (malformed JSON, cut short, refused); the
	// answer has no text and confidence 0.
	ReasonInvalidOutput = "invalid_output"
)

// DefaultThreshold is the confidence below which an answer is not sent
// and the conversation goes to a human.
const DefaultThreshold = 0.6

// DefaultMaxUnanswered is how many questions in a row the concierge may
// fail to answer before the conversation goes to a human.
const DefaultMaxUnanswered = 2

// DefaultKeywords returns the built-in English escalation keywords: a
// customer asking for money back, complaining, threatening, or asking for
// a person. Each is matched as whole words, case-insensitively; a phrase
// matches its words in a row.
func DefaultKeywords() []string {
	return []string{
		"refund", "refunds", "refunded", "money back", "reimburse", "reimbursement",
		"complaint", "complaints", "complain", "complaining",
		"chargeback", "charge back", "dispute", "fraud", "scam",
		"lawyer", "attorney", "legal action", "sue you", "court",
		"human", "agent", "real person", "representative", "manager", "supervisor",
		"speak to someone", "talk to someone", "speak to a person", "talk to a person",
		"customer service",
	}
}

// Rules decide when a conversation leaves the concierge for the human
// queue. The zero value holds the defaults.
type Rules struct {
	// Keywords escalate an inbound text that has any of them (reason
	// ReasonKeyword). nil means DefaultKeywords(); an empty non-nil
	// slice disables them.
	Keywords []string
	// MerchantKeywords are the merchant's own list (reason
	// ReasonMerchantKeyword), matched like Keywords.
	MerchantKeywords []string
	// Threshold is the confidence below which an answer escalates
	// (ReasonLowConfidence); 0 means DefaultThreshold. At most 1.
	Threshold float64
	// MaxUnanswered escalates once the concierge could not answer that
	// many questions in a row, this one included
	// (ReasonRepeatedUnanswered); 0 means DefaultMaxUnanswered.
	MaxUnanswered int
}

// Validate reports every problem of the rules at once.
func (r Rules) Validate() error {
	var errs []error
	if math.IsNaN(r.Threshold) || r.Threshold < 0 || r.Threshold > 1 {
		errs = append(errs, errors.New("concierge: threshold must be within [0, 1]"))
	}
	if r.MaxUnanswered < 0 {
		errs = append(errs, errors.New("concierge: max unanswered must not be negative"))
	}
	for _, list := range [][]string{r.Keywords, r.MerchantKeywords} {
		for _, k := range list {
			if len(words(k)) == 0 {
				errs = append(errs, errors.New("concierge: a keyword has no letters or digits"))
				break
			}
		}
	}
	return errors.Join(errs...)
}

func (r Rules) withDefaults() Rules {
	if r.Keywords == nil {
		r.Keywords = DefaultKeywords()
	}
	if r.Threshold == 0 || math.IsNaN(r.Threshold) {
		r.Threshold = DefaultThreshold
	}
	if r.MaxUnanswered <= 0 {
		r.MaxUnanswered = DefaultMaxUnanswered
	}
	return r
}

// Before decides on the question alone, before any answer is asked for:
// a keyword of either list, or as many unanswered questions in a row as
// MaxUnanswered allows already. A conversation it escalates is not given
// to an answerer at all.
func (r Rules) Before(q Question) (escalate bool, reason string) {
	r = r.withDefaults()
	text := words(q.Text)
	if hasAny(text, r.Keywords) {
		return true, ReasonKeyword
	}
	if hasAny(text, r.MerchantKeywords) {
		return true, ReasonMerchantKeyword
	}
	if unansweredInARow(q.History) >= r.MaxUnanswered {
		return true, ReasonRepeatedUnanswered
	}
	return false, ""
}

// Decide applies every rule to a question and its answer: Before's rules
// first, then the answerer's own Escalation, then a confidence below the
// threshold, then this unanswered question making MaxUnanswered in a row.
// The first that matches gives the reason; escalate is false and reason
// empty when none does.
func (r Rules) Decide(q Question, a Answer) (escalate bool, reason string) {
	if esc, why := r.Before(q); esc {
		return esc, why
	}
	r = r.withDefaults()
	if a.Escalation != "" {
		return true, a.Escalation
	}
	if math.IsNaN(a.Confidence) || a.Confidence < r.Threshold || strings.TrimSpace(a.Text) == "" {
		return true, ReasonLowConfidence
	}
	if a.Unanswered && unansweredInARow(q.History)+1 >= r.MaxUnanswered {
		return true, ReasonRepeatedUnanswered
	}
	return false, ""
}

// unansweredInARow counts the concierge's latest answers that were
// "I don't know", back to its last real answer or a merchant's message
// (a human stepping in starts the count again). Customer messages in
// between do not break the run.
func unansweredInARow(history []Message) int {
	n := 0
	for i := len(history) - 1; i >= 0; i-- {
		switch m := history[i]; m.Role {
		case RoleConcierge:
			if !m.Unanswered {
				return n
			}
			n++
		case RoleMerchant:
			return n
		}
	}
	return n
}

// words splits s into lower-case words: runs of letters and digits.
// Everything else (spaces, punctuation, symbols, an apostrophe) separates
// them, so "Refund!" is the word "refund" and "don't" is "don", "t".
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(c rune) bool {
		return !unicode.IsLetter(c) && !unicode.IsDigit(c)
	})
}

// hasAny reports whether text (words) holds any keyword's words in a
// row.
func hasAny(text []string, keywords []string) bool {
	for _, k := range keywords {
		if hasPhrase(text, words(k)) {
			return true
		}
	}
	return false
}

func hasPhrase(text, phrase []string) bool {
	if len(phrase) == 0 {
		return false
	}
outer:
	for i := 0; i+len(phrase) <= len(text); i++ {
		for j, w := range phrase {
			if text[i+j] != w {
				continue outer
			}
		}
		return true
	}
	return false
}
