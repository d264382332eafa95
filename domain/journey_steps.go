package domain

import (
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Journey step content limits.
const (
	MaxStepSubject    = 200      // characters of an e-mail subject
	MaxStepText       = 10_000   // characters of an e-mail or SMS text
	MaxStepHTML       = 64 << 10 // bytes of an e-mail's HTML part
	MaxStepParameters = 10       // parameters of a WhatsApp template
	MaxStepParameter  = 1024     // characters of one parameter
	DefaultLanguage   = "en_US"  // a WhatsApp template's language when none is given
	maxMergeFieldName = 64       // characters between the braces, for messages
	mergeOpen         = "{{"     // a merge field starts
	mergeClose        = "}}"     // and ends
)

// Condition vocabulary of a condition step (evaluated by the step runner
// against the customer's read model when the step is reached).
const (
	// ConditionOrderedSinceEnrollment holds when the customer has an order
	// recorded after the enrollment started.
	ConditionOrderedSinceEnrollment = "ordered_since_enrollment"
	// ConditionNotOrderedSinceEnrollment is its negation.
	ConditionNotOrderedSinceEnrollment = "not_ordered_since_enrollment"
	// ConditionHasTag holds when the customer has the step's Tag.
	ConditionHasTag = "has_tag"
	// ConditionAcceptsMarketing holds when the customer consented to
	// marketing on the step's Channel.
	ConditionAcceptsMarketing = "accepts_marketing"
)

// JourneyConditions are the conditions a condition step may test.
func JourneyConditions() []string {
	return []string{ConditionOrderedSinceEnrollment, ConditionNotOrderedSinceEnrollment, ConditionHasTag, ConditionAcceptsMarketing}
}

// What a condition step does when its condition does not hold (when it
// holds, the enrollment goes on to the next step).
const (
	// OtherwiseExit ends the enrollment (exited, reason condition_not_met).
	OtherwiseExit = "exit"
	// OtherwiseSkipNext skips the step after the condition.
	OtherwiseSkipNext = "skip_next"
)

// ExitConditionNotMet is the exit reason of an enrollment that a condition
// step ended; ExitStep the reason of one that reached an exit step.
const (
	ExitConditionNotMet = "condition_not_met"
	ExitStep            = "exit_step"
)

// MergeFields are the merge fields a message's content may carry, written
// {{first_name}} (spaces inside the braces allowed). The runner fills them
// from the customer and the shop, HTML-escaped in an HTML part; an empty
// value renders as nothing.
func MergeFields() []string { return []string{"first_name", "last_name", "full_name", "shop_name"} }

var languageTag = regexp.MustCompile(`^[a-z]{2,3}(_[A-Z]{2})?$`)

// stepFields are a step's optional members in their JSON order, with
// whether the step sets each.
func stepFields(s JourneyStep) []struct {
	name string
	set  bool
} {
	return []struct {
		name string
		set  bool
	}{
		{"hours", s.Hours != 0}, {"channel", s.Channel != ""}, {"template", s.Template != ""},
		{"subject", s.Subject != ""}, {"text", s.Text != ""}, {"html", s.HTML != ""},
		{"language", s.Language != ""}, {"parameters", s.Parameters != nil},
		{"condition", s.Condition != ""}, {"tag", s.Tag != ""}, {"otherwise", s.Otherwise != ""},
	}
}

// onlyFields returns a 422 naming the first member the step sets that its
// kind does not take.
func onlyFields(field, kind string, s JourneyStep, allowed ...string) error {
	for _, f := range stepFields(s) {
		if f.set && !slices.Contains(allowed, f.name) {
			return Invalid(field+"."+f.name, "a %s step has no %s", kind, f.name)
		}
	}
	return nil
}

// journeySteps validates the steps and returns them normalised: 1 to
// MaxJourneySteps, with at least one message. Each step is a wait of 1 to
// MaxJourneyWaitHours hours; a message (see sendStep); a condition (see
// conditionStep); or an exit. A member a step's type does not take is a
// 422 naming it (steps[2].subject).
func journeySteps(in []JourneyStep) ([]JourneyStep, error) {
	if len(in) == 0 || len(in) > MaxJourneySteps {
		return nil, Invalid("steps", "send 1 to %d steps", MaxJourneySteps)
	}
	out := make([]JourneyStep, len(in))
	messages := 0
	for i, s := range in {
		field := "steps[" + itoa(i) + "]"
		var err error
		switch s.Type {
		case StepWait:
			if s.Hours < 1 || s.Hours > MaxJourneyWaitHours {
				return nil, Invalid(field+".hours", "a wait step has hours between 1 and %d", MaxJourneyWaitHours)
			}
			if err = onlyFields(field, s.Type, s, "hours"); err == nil {
				out[i] = JourneyStep{Type: StepWait, Hours: s.Hours}
			}
		case StepSendMessage:
			out[i], err = sendStep(field, s)
			messages++
		case StepCondition:
			out[i], err = conditionStep(field, s, i == len(in)-1)
		case StepExit:
			if err = onlyFields(field, s.Type, s); err == nil {
				out[i] = JourneyStep{Type: StepExit}
			}
		default:
			return nil, Invalid(field+".type", "type must be one of %s, %s, %s, %s", StepWait, StepSendMessage, StepCondition, StepExit)
		}
		if err != nil {
			return nil, err
		}
	}
	if messages == 0 {
		return nil, Invalid("steps", "a journey needs at least one send_message step")
	}
	return out, nil
}

// sendStep validates a send_message step: a channel, and either a
// template name or the channel's content. WhatsApp always sends a template
// (with Language, default DefaultLanguage, and up to MaxStepParameters
// Parameters); e-mail sends Subject and Text (and optional HTML) or a
// template; SMS sends Text or a template. Content may carry MergeFields.
func sendStep(field string, s JourneyStep, extra ...string) (JourneyStep, error) {
	if !slices.Contains(JourneyChannels(), s.Channel) {
		return JourneyStep{}, Invalid(field+".channel", "channel must be one of %s", strings.Join(JourneyChannels(), ", "))
	}
	out := JourneyStep{Type: StepSendMessage, Channel: s.Channel}
	var err error
	if s.Hours != 0 {
		return JourneyStep{}, Invalid(field+".hours", "a send_message step has no hours")
	}
	if out.Template, err = stepText(field+".template", strings.TrimSpace(s.Template), MaxCatalogText); err != nil {
		return JourneyStep{}, err
	}
	switch s.Channel {
	case ChannelWhatsApp:
		if err := onlyFields(field, "whatsapp", s, "channel", "template", "language", "parameters"); err != nil {
			return JourneyStep{}, err
		}
		if out.Template == "" {
			return JourneyStep{}, Invalid(field+".template", "a whatsapp step has a template name of 1 to %d characters", MaxCatalogText)
		}
		out.Language = DefaultLanguage
		if s.Language != "" {
			if !languageTag.MatchString(s.Language) {
				return JourneyStep{}, Invalid(field+".language", "language is a template language code such as en_US or de")
			}
			out.Language = s.Language
		}
		if len(s.Parameters) > MaxStepParameters {
			return JourneyStep{}, Invalid(field+".parameters", "send at most %d parameters", MaxStepParameters)
		}
		for k, p := range s.Parameters {
			f := field + ".parameters[" + itoa(k) + "]"
			if strings.TrimSpace(p) == "" {
				return JourneyStep{}, Invalid(f, "a parameter is not empty")
			}
			if _, err := content(f, p, MaxStepParameter, extra...); err != nil {
				return JourneyStep{}, err
			}
		}
		if len(s.Parameters) > 0 {
			out.Parameters = slices.Clone(s.Parameters)
		}
	case ChannelEmail:
		if err := onlyFields(field, "email", s, "channel", "template", "subject", "text", "html"); err != nil {
			return JourneyStep{}, err
		}
		if s.Subject == "" && s.Text == "" && s.HTML == "" {
			if out.Template == "" {
				return JourneyStep{}, Invalid(field+".template", "an email step has a subject and a text, or a template name")
			}
			break
		}
		if out.Subject, err = content(field+".subject", strings.TrimSpace(s.Subject), MaxStepSubject, extra...); err != nil {
			return JourneyStep{}, err
		}
		if out.Subject == "" {
			return JourneyStep{}, Invalid(field+".subject", "an email step with content has a subject")
		}
		if strings.ContainsAny(out.Subject, "\r\n") {
			return JourneyStep{}, Invalid(field+".subject", "a subject is one line")
		}
		if out.Text, err = content(field+".text", s.Text, MaxStepText, extra...); err != nil {
			return JourneyStep{}, err
		}
		if strings.TrimSpace(out.Text) == "" {
			return JourneyStep{}, Invalid(field+".text", "an email step with content has a text part")
		}
		if len(s.HTML) > MaxStepHTML {
			return JourneyStep{}, Invalid(field+".html", "html is at most %d bytes", MaxStepHTML)
		}
		if out.HTML, err = content(field+".html", s.HTML, MaxStepHTML, extra...); err != nil {
			return JourneyStep{}, err
		}
	default: // sms
		if err := onlyFields(field, "sms", s, "channel", "template", "text"); err != nil {
			return JourneyStep{}, err
		}
		if s.Text == "" && out.Template == "" {
			return JourneyStep{}, Invalid(field+".template", "an sms step has a text or a template name")
		}
		if out.Text, err = content(field+".text", s.Text, MaxStepText, extra...); err != nil {
			return JourneyStep{}, err
		}
		if s.Text != "" && strings.TrimSpace(out.Text) == "" {
			return JourneyStep{}, Invalid(field+".text", "text is not blank")
		}
	}
	return out, nil
}

// conditionStep validates a condition step: a condition of
// JourneyConditions (has_tag with a Tag, accepts_marketing with a
// Channel) and Otherwise (default exit; skip_next needs a step after it).
func conditionStep(field string, s JourneyStep, last bool) (JourneyStep, error) {
	out := JourneyStep{Type: StepCondition, Condition: s.Condition, Otherwise: s.Otherwise}
	allowed := []string{"condition", "otherwise"}
	switch s.Condition {
	case ConditionOrderedSinceEnrollment, ConditionNotOrderedSinceEnrollment:
	case ConditionHasTag:
		allowed = append(allowed, "tag")
		tag, err := catalogText(field+".tag", s.Tag, true)
		if err != nil {
			return JourneyStep{}, Invalid(field+".tag", "a has_tag condition has a tag of 1 to %d characters", MaxCatalogText)
		}
		out.Tag = tag
	case ConditionAcceptsMarketing:
		allowed = append(allowed, "channel")
		if !slices.Contains(JourneyChannels(), s.Channel) {
			return JourneyStep{}, Invalid(field+".channel", "an accepts_marketing condition has a channel of %s", strings.Join(JourneyChannels(), ", "))
		}
		out.Channel = s.Channel
	default:
		return JourneyStep{}, Invalid(field+".condition", "condition must be one of %s", strings.Join(JourneyConditions(), ", "))
	}
	if err := onlyFields(field, "condition", s, allowed...); err != nil {
		return JourneyStep{}, err
	}
	switch s.Otherwise {
	case "":
		out.Otherwise = OtherwiseExit
	case OtherwiseExit:
	case OtherwiseSkipNext:
		if last {
			return JourneyStep{}, Invalid(field+".otherwise", "skip_next needs a step after the condition")
		}
	default:
		return JourneyStep{}, Invalid(field+".otherwise", "otherwise must be %s or %s", OtherwiseExit, OtherwiseSkipNext)
	}
	return out, nil
}

// stepText checks that s is valid UTF-8 of at most max characters.
func stepText(field, s string, max int) (string, error) {
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > max {
		return "", Invalid(field, "at most %d characters of text", max)
	}
	return s, nil
}

// content checks a message's content: text of at most max characters
// whose merge fields are all MergeFields.
func content(field, s string, max int, extra ...string) (string, error) {
	s, err := stepText(field, s, max)
	if err != nil {
		return "", err
	}
	if err := CheckMergeFields(field, s, extra...); err != nil {
		return "", err
	}
	return s, nil
}

// CheckMergeFields reports a 422 on field when s has a merge field that is
// not one of MergeFields (or of extra, the fields of a built-in flow's
// messages), or a "{{" left open.
func CheckMergeFields(field, s string, extra ...string) error {
	for rest := s; ; {
		i := strings.Index(rest, mergeOpen)
		if i < 0 {
			return nil
		}
		rest = rest[i+len(mergeOpen):]
		j := strings.Index(rest, mergeClose)
		if j < 0 {
			return Invalid(field, "a merge field opened with {{ is not closed with }}")
		}
		name := strings.TrimSpace(rest[:j])
		if !slices.Contains(MergeFields(), name) && !slices.Contains(extra, name) {
			if utf8.RuneCountInString(name) > maxMergeFieldName || !utf8.ValidString(name) {
				name = "…"
			}
			known := append(MergeFields(), extra...)
			return Invalid(field, "unknown merge field {{%s}}: merge fields are %s", name, "{{"+strings.Join(known, "}}, {{")+"}}")
		}
		rest = rest[j+len(mergeClose):]
	}
}

// RenderMergeFields replaces the merge fields of s by their values
// (values["first_name"], …; absent ones render as nothing), with escape
// applied to each value (html.EscapeString for an HTML part, nil for
// text). It is the one renderer of step content, for the runner.
func RenderMergeFields(s string, values map[string]string, escape func(string) string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, mergeOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := strings.Index(s[i+len(mergeOpen):], mergeClose)
		if j < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		v := values[strings.TrimSpace(s[i+len(mergeOpen):i+len(mergeOpen)+j])]
		if escape != nil {
			v = escape(v)
		}
		b.WriteString(v)
		s = s[i+len(mergeOpen)+j+len(mergeClose):]
	}
}
