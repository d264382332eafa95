package concierge_test

import (
	"math"
	"strings"
	"testing"

	"github.com/cgp-platform/cgp/concierge"
)

func unanswered(n int) []concierge.Message {
	var h []concierge.Message
	for range n {
		h = append(h,
			concierge.Message{Role: concierge.RoleCustomer, Text: "what about the thing?"},
			concierge.Message{Role: concierge.RoleConcierge, Text: "Sorry, I don't know.", Unanswered: true})
	}
	return h
}

func TestRulesDecide(t *testing.T) {
	good := concierge.Answer{Text: "Your order has shipped.", Confidence: 0.9, Sources: []string{"order:#1043"}}
	dontKnow := concierge.Answer{Text: "Sorry, I don't know.", Confidence: 0.1, Unanswered: true}
	answered := concierge.Message{Role: concierge.RoleConcierge, Text: "It has shipped."}
	tests := []struct {
		name     string
		rules    concierge.Rules
		q        concierge.Question
		a        concierge.Answer
		escalate bool
		reason   string
	}{
		{name: "plain question, confident answer", q: concierge.Question{Text: "Where is my order?"}, a: good},
		{name: "refund keyword", q: concierge.Question{Text: "I want a refund"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "keyword is case-insensitive", q: concierge.Question{Text: "REFUND NOW!!!"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "keyword with punctuation around", q: concierge.Question{Text: "(complaint)"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "keyword inside another word does not match", q: concierge.Question{Text: "Is this humane packaging? Any agents of change?"}, a: good},
		{name: "phrase keyword", q: concierge.Question{Text: "can I speak to someone please"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "phrase words apart do not match", q: concierge.Question{Text: "speak slowly to me, someone said"}, a: good},
		{name: "human", q: concierge.Question{Text: "Are you a human?"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "chargeback", q: concierge.Question{Text: "I'll file a chargeback"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "lawyer", q: concierge.Question{Text: "my lawyer will hear of this"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "keywords are checked even when the answer is good", q: concierge.Question{Text: "Agent please"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "empty keyword list disables the defaults", rules: concierge.Rules{Keywords: []string{}}, q: concierge.Question{Text: "refund"}, a: good},
		{name: "own keyword list replaces the defaults", rules: concierge.Rules{Keywords: []string{"broken"}}, q: concierge.Question{Text: "It arrived BROKEN"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "merchant keyword", rules: concierge.Rules{MerchantKeywords: []string{"wholesale", "bulk order"}}, q: concierge.Question{Text: "Do you do a Bulk Order discount?"}, a: good, escalate: true, reason: concierge.ReasonMerchantKeyword},
		{name: "built-in keyword wins over the merchant's", rules: concierge.Rules{MerchantKeywords: []string{"refund"}}, q: concierge.Question{Text: "refund"}, a: good, escalate: true, reason: concierge.ReasonKeyword},
		{name: "low confidence", q: concierge.Question{Text: "hmm"}, a: concierge.Answer{Text: "Maybe.", Confidence: 0.59}, escalate: true, reason: concierge.ReasonLowConfidence},
		{name: "at the threshold is enough", q: concierge.Question{Text: "hmm"}, a: concierge.Answer{Text: "Maybe.", Confidence: 0.6}},
		{name: "NaN confidence is low", q: concierge.Question{Text: "hmm"}, a: concierge.Answer{Text: "Maybe.", Confidence: math.NaN()}, escalate: true, reason: concierge.ReasonLowConfidence},
		{name: "an empty answer is never sent", q: concierge.Question{Text: "hmm"}, a: concierge.Answer{Text: "  ", Confidence: 1}, escalate: true, reason: concierge.ReasonLowConfidence},
		{name: "own threshold", rules: concierge.Rules{Threshold: 0.95}, q: concierge.Question{Text: "hmm"}, a: good, escalate: true, reason: concierge.ReasonLowConfidence},
		{name: "answerer's own reason", q: concierge.Question{Text: "hmm"}, a: concierge.Answer{Escalation: concierge.ReasonInvalidOutput}, escalate: true, reason: concierge.ReasonInvalidOutput},
		{name: "one unanswered before, confident answer now", q: concierge.Question{Text: "where is my order", History: unanswered(1)}, a: good},
		{name: "two unanswered before: no more answering", q: concierge.Question{Text: "where is my order", History: unanswered(2)}, a: good, escalate: true, reason: concierge.ReasonRepeatedUnanswered},
		{name: "a real answer in between breaks the run", q: concierge.Question{Text: "where is my order", History: append(append(unanswered(1), answered), unanswered(1)...)}, a: good},
		{name: "a merchant's message starts the count again", q: concierge.Question{Text: "x", History: append(unanswered(2), concierge.Message{Role: concierge.RoleMerchant, Text: "Hi, Sam here."})}, a: good},
		{
			name: "the second unanswered in a row escalates even under a low threshold", rules: concierge.Rules{Threshold: 0.05},
			q: concierge.Question{Text: "and the other thing?", History: unanswered(1)}, a: dontKnow, escalate: true, reason: concierge.ReasonRepeatedUnanswered,
		},
		{name: "the first unanswered under a low threshold is sent", rules: concierge.Rules{Threshold: 0.05}, q: concierge.Question{Text: "and the other thing?"}, a: dontKnow},
		{name: "own max unanswered", rules: concierge.Rules{MaxUnanswered: 4}, q: concierge.Question{Text: "x", History: unanswered(3)}, a: good},
		{name: "own max unanswered reached", rules: concierge.Rules{MaxUnanswered: 4}, q: concierge.Question{Text: "x", History: unanswered(4)}, a: good, escalate: true, reason: concierge.ReasonRepeatedUnanswered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.rules.Validate(); err != nil {
				t.Fatal(err)
			}
			escalate, reason := tt.rules.Decide(tt.q, tt.a)
			if escalate != tt.escalate || reason != tt.reason {
				t.Errorf("Decide = %v, %q; want %v, %q", escalate, reason, tt.escalate, tt.reason)
			}
		})
	}
}

func TestRulesBeforeLooksAtTheQuestionOnly(t *testing.T) {
	var r concierge.Rules
	tests := []struct {
		q      concierge.Question
		reason string
	}{
		{concierge.Question{Text: "where is my order?"}, ""},
		{concierge.Question{Text: "I want my money back"}, concierge.ReasonKeyword},
		{concierge.Question{Text: "hello", History: unanswered(2)}, concierge.ReasonRepeatedUnanswered},
		// Keywords in earlier messages were decided on then.
		{concierge.Question{Text: "thanks", History: []concierge.Message{{Role: concierge.RoleCustomer, Text: "refund"}}}, ""},
	}
	for _, tt := range tests {
		escalate, reason := r.Before(tt.q)
		if escalate != (tt.reason != "") || reason != tt.reason {
			t.Errorf("Before(%q) = %v, %q; want reason %q", tt.q.Text, escalate, reason, tt.reason)
		}
	}
}

func TestRulesValidateReportsEveryProblem(t *testing.T) {
	err := concierge.Rules{Threshold: 1.5, MaxUnanswered: -1, MerchantKeywords: []string{"ok", "!!"}}.Validate()
	if err == nil {
		t.Fatal("invalid rules accepted")
	}
	for _, want := range []string{"threshold", "max unanswered", "keyword"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
	if err := (concierge.Rules{Threshold: math.NaN()}).Validate(); err == nil {
		t.Error("NaN threshold accepted")
	}
	if err := (concierge.Rules{}).Validate(); err != nil {
		t.Errorf("zero rules: %v", err)
	}
}
