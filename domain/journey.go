package domain

import (
	"slices"
	"strings"
	"time"
)

// journeyEvents lists the journey event types.
func journeyEvents() []EventSpec {
	return []EventSpec{
		{Name: "JourneyCreated", Version: 1, New: func() Event { return &JourneyCreated{} }},
		{Name: "JourneyEnrollmentStarted", Version: 1, New: func() Event { return &JourneyEnrollmentStarted{} }},
		{Name: "JourneyPaused", Version: 1, New: func() Event { return &JourneyPaused{} }},
		{Name: "JourneyResumed", Version: 1, New: func() Event { return &JourneyResumed{} }},
		{Name: "JourneyEnrollmentCompleted", Version: 1, New: func() Event { return &JourneyEnrollmentCompleted{} }},
		{Name: "JourneyUpdated", Version: 1, New: func() Event { return &JourneyUpdated{} }},
	}
}

// PrefixEnrollment is the id prefix of a journey enrollment.
const PrefixEnrollment = "enr_"

// Journey limits.
const (
	MaxJourneySteps     = 50
	MaxJourneyWaitHours = 24 * 365
)

// Journey statuses (DESIGN §7). A journey is created draft or active.
const (
	JourneyStatusDraft    = "draft"
	JourneyStatusActive   = "active"
	JourneyStatusPaused   = "paused"
	JourneyStatusArchived = "archived"
)

// JourneyStatuses are the statuses a journey may have.
func JourneyStatuses() []string {
	return []string{JourneyStatusDraft, JourneyStatusActive, JourneyStatusPaused, JourneyStatusArchived}
}

// Enrollment statuses (DESIGN §7).
const (
	EnrollmentActive    = "active"
	EnrollmentCompleted = "completed"
	EnrollmentExited    = "exited"
)

// EnrollmentStatuses are the statuses an enrollment may have.
func EnrollmentStatuses() []string {
	return []string{EnrollmentActive, EnrollmentCompleted, EnrollmentExited}
}

// JourneyTriggers are the commerce topics a journey may start on: the
// topics whose events name a customer (each is one of the platform's
// topics; a test checks it against the ingest topic list).
// customers/create means the first snapshot of a customer (CustomerCreated,
// whichever customer topic brought it).
func JourneyTriggers() []string {
	return []string{"customers/create", "orders/create", "orders/updated", "orders/fulfilled", "orders/paid",
		"checkouts/create", "checkouts/update", "subscription_contracts/create", "subscription_contracts/update"}
}

// Journey step types and channels.
const (
	StepWait        = "wait"
	StepSendMessage = "send_message"
	StepCondition   = "condition"
	StepExit        = "exit"
)

// JourneyChannels are the channels a send_message step may use.
func JourneyChannels() []string { return []string{"whatsapp", "sms", "email"} }

// JourneyStream is the stream of one journey.
func JourneyStream(id string) string { return "journey-" + id }

// EnrollmentStream is the stream of one customer in one journey: every
// enrollment of the customer in the journey, so the once-per-customer rule
// is decided against one stream with its expected revision. Both parts are
// opaque ids, not personal data.
func EnrollmentStream(journeyID, customerID string) string {
	return "journey_enrollment-" + journeyID + "_" + customerID
}

// JourneyStep is one step of a journey: a wait of Hours; a message on
// Channel, with Template (a template name) and, by channel, its content
// (e-mail Subject, Text, HTML; WhatsApp Language and Parameters for the
// template; SMS Text); a condition (Condition, with Tag or Channel, and
// what happens Otherwise); or an exit. Every field but Type is optional in
// the JSON, so events recorded before a field existed decode as they were.
type JourneyStep struct {
	Type       string   `json:"type"`
	Hours      int      `json:"hours,omitempty"`
	Channel    string   `json:"channel,omitempty"`
	Template   string   `json:"template,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Text       string   `json:"text,omitempty"`
	HTML       string   `json:"html,omitempty"`
	Language   string   `json:"language,omitempty"`
	Parameters []string `json:"parameters,omitempty"`
	Condition  string   `json:"condition,omitempty"`
	Tag        string   `json:"tag,omitempty"`
	Otherwise  string   `json:"otherwise,omitempty"`
}

// JourneyCreated: a merchant created a journey through the admin API.
type JourneyCreated struct {
	JourneyID    string        `json:"journey_id"`
	ShopID       string        `json:"shop_id"`
	Name         string        `json:"name"`
	Trigger      string        `json:"trigger"`
	Steps        []JourneyStep `json:"steps"`
	AllowReentry bool          `json:"allow_reentry"`
	Status       string        `json:"status"`
	CreatedAt    time.Time     `json:"created_at"`
}

// EventType implements Event.
func (JourneyCreated) EventType() string { return "JourneyCreated" }

// JourneyEnrollmentStarted: a customer entered a journey because of a
// commerce event (TriggerEventID, with its topic).
type JourneyEnrollmentStarted struct {
	EnrollmentID   string    `json:"enrollment_id"`
	JourneyID      string    `json:"journey_id"`
	ShopID         string    `json:"shop_id"`
	CustomerID     string    `json:"customer_id"`
	TriggerEventID string    `json:"trigger_event_id"`
	TriggerTopic   string    `json:"trigger_topic"`
	EnrolledAt     time.Time `json:"enrolled_at"`
	// StepsVersion is the version of the journey's steps the enrollment
	// runs (JourneyUpdated.Version at enrollment); 0 (absent, events
	// recorded before journeys could be edited) means 1.
	StepsVersion int `json:"steps_version,omitempty"`
}

// Version is the steps version the enrollment runs: StepsVersion, 1 when
// absent.
func (e *JourneyEnrollmentStarted) Version() int { return max(e.StepsVersion, 1) }

// EventType implements Event.
func (JourneyEnrollmentStarted) EventType() string { return "JourneyEnrollmentStarted" }

// JourneyDraft is what a merchant sends to create a journey.
type JourneyDraft struct {
	Name, Trigger, Status string
	Steps                 []JourneyStep
	AllowReentry          bool
}

// NewJourney decides the creation of a journey with a fresh id. Status
// defaults to active (a journey created through the API is meant to run;
// send "draft" to prepare one); only draft and active may be created.
func NewJourney(shopID string, d JourneyDraft, now time.Time) (*JourneyCreated, error) {
	ev := &JourneyCreated{JourneyID: NewID(PrefixJourney), ShopID: shopID, AllowReentry: d.AllowReentry, CreatedAt: now.UTC()}
	var err error
	if ev.Name, err = catalogText("name", d.Name, true); err != nil {
		return nil, err
	}
	if !slices.Contains(JourneyTriggers(), d.Trigger) {
		return nil, Invalid("trigger", "trigger must be one of %s", strings.Join(JourneyTriggers(), ", "))
	}
	ev.Trigger = d.Trigger
	switch d.Status {
	case "":
		ev.Status = JourneyStatusActive
	case JourneyStatusDraft, JourneyStatusActive:
		ev.Status = d.Status
	default:
		return nil, Invalid("status", "a journey is created draft or active")
	}
	if ev.Steps, err = journeySteps(d.Steps); err != nil {
		return nil, err
	}
	return ev, nil
}

// JourneyEnrollments is the aggregate of one customer in one journey:
// whether the customer was enrolled, and the trigger events already
// handled (a redelivered trigger enrolls nobody again).
type JourneyEnrollments struct {
	Enrolled bool
	Triggers map[string]bool
	Active   string // the enrollment id in progress, "" when none
}

// Apply folds an event into the aggregate.
func (a *JourneyEnrollments) Apply(e Event) {
	switch ev := e.(type) {
	case *JourneyEnrollmentStarted:
		a.Enrolled, a.Active = true, ev.EnrollmentID
		if a.Triggers == nil {
			a.Triggers = map[string]bool{}
		}
		a.Triggers[ev.TriggerEventID] = true
	case *JourneyEnrollmentExited:
		if a.Active == ev.EnrollmentID {
			a.Active = ""
		}
	case *JourneyEnrollmentCompleted:
		if a.Active == ev.EnrollmentID {
			a.Active = ""
		}
	}
}

// Enrollment is a request to enroll a customer in a journey because of a
// trigger event.
type Enrollment struct {
	ShopID, JourneyID, CustomerID string
	TriggerEventID, TriggerTopic  string
	AllowReentry                  bool
	// StepsVersion is the journey's steps version as of the trigger (0
	// means 1).
	StepsVersion int
}

// Enroll decides an enrollment: nil (nothing to do) when the trigger was
// already handled, or when the customer was enrolled before and the
// journey does not allow re-entry. The enrollment id derives from the
// journey and the trigger event.
func (a *JourneyEnrollments) Enroll(in Enrollment, now time.Time) (*JourneyEnrollmentStarted, error) {
	if in.ShopID == "" || !HasPrefixID(in.JourneyID, PrefixJourney) || !HasPrefixID(in.CustomerID, PrefixCustomer) || in.TriggerEventID == "" {
		return nil, Invalid("enrollment", "an enrollment needs a shop, a journey, a customer and a trigger event")
	}
	if a.Triggers[in.TriggerEventID] || (a.Enrolled && !in.AllowReentry) {
		return nil, nil
	}
	return &JourneyEnrollmentStarted{
		EnrollmentID: IDFromExternal(PrefixEnrollment, "enrollment", in.JourneyID, in.TriggerEventID),
		JourneyID:    in.JourneyID, ShopID: in.ShopID, CustomerID: in.CustomerID,
		TriggerEventID: in.TriggerEventID, TriggerTopic: in.TriggerTopic, EnrolledAt: now.UTC(),
		StepsVersion: max(in.StepsVersion, 1),
	}, nil
}

// JourneyPaused: an active journey was paused, by its merchant (Reason
// manual) or because a message template of its WhatsApp steps was paused
// or rejected (Reason template_paused or template_rejected, with the
// template and the template event). A paused journey enrolls nobody.
type JourneyPaused struct {
	JourneyID       string    `json:"journey_id"`
	ShopID          string    `json:"shop_id"`
	Reason          string    `json:"reason"`
	TemplateID      string    `json:"template_id,omitempty"`
	TemplateEventID string    `json:"template_event_id,omitempty"`
	PausedAt        time.Time `json:"paused_at"`
}

// EventType implements Event.
func (JourneyPaused) EventType() string { return "JourneyPaused" }

// JourneyResumed: a paused journey is active again, by its merchant
// (Reason manual) or because the template that paused it was approved
// (Reason template_approved).
type JourneyResumed struct {
	JourneyID       string    `json:"journey_id"`
	ShopID          string    `json:"shop_id"`
	Reason          string    `json:"reason"`
	TemplateID      string    `json:"template_id,omitempty"`
	TemplateEventID string    `json:"template_event_id,omitempty"`
	ResumedAt       time.Time `json:"resumed_at"`
}

// EventType implements Event.
func (JourneyResumed) EventType() string { return "JourneyResumed" }

// Journey is the journey aggregate: its shop, steps and status; while
// paused, why and the template that paused it (when one did).
type Journey struct {
	ShopID, Status         string
	Name                   string
	Steps                  []JourneyStep
	AllowReentry           bool
	Version                int // 1 at creation, +1 per JourneyUpdated
	Exists                 bool
	PausedReason, PausedBy string
	// handled holds the template events the journey reacted to.
	handled map[string]bool
}

// Apply folds an event into the journey.
func (j *Journey) Apply(e Event) {
	switch ev := e.(type) {
	case *JourneyCreated:
		j.ShopID, j.Status, j.Steps, j.Exists = ev.ShopID, ev.Status, ev.Steps, true
		j.Name, j.AllowReentry, j.Version = ev.Name, ev.AllowReentry, 1
	case *JourneyUpdated:
		j.Name, j.Steps, j.AllowReentry, j.Status, j.Version = ev.Name, ev.Steps, ev.AllowReentry, ev.Status, ev.Version
		if ev.Status != JourneyStatusPaused {
			j.PausedReason, j.PausedBy = "", ""
		}
	case *JourneyPaused:
		j.Status, j.PausedReason, j.PausedBy = JourneyStatusPaused, ev.Reason, ev.TemplateID
		j.handle(ev.TemplateEventID)
	case *JourneyResumed:
		j.Status, j.PausedReason, j.PausedBy = JourneyStatusActive, "", ""
		j.handle(ev.TemplateEventID)
	}
}

func (j *Journey) handle(templateEventID string) {
	if templateEventID == "" {
		return
	}
	if j.handled == nil {
		j.handled = map[string]bool{}
	}
	j.handled[templateEventID] = true
}

// UsesTemplate tells whether a WhatsApp step of the journey sends the
// template: steps name a template by its name, or by its id.
func (j *Journey) UsesTemplate(templateID, name string) bool {
	for _, s := range j.Steps {
		if s.Type == StepSendMessage && s.Channel == ChannelWhatsApp && s.Template != "" &&
			(s.Template == templateID || (name != "" && s.Template == name)) {
			return true
		}
	}
	return false
}

// Pause decides a merchant's pause of a journey: only an active journey
// can be paused; pausing a paused, draft or archived one is a conflict.
// A journey of another shop is not found.
func (j *Journey) Pause(shopID, journeyID string, now time.Time) (*JourneyPaused, error) {
	if !j.Exists || j.ShopID != shopID {
		return nil, NotFound("journey")
	}
	switch j.Status {
	case JourneyStatusActive:
	case JourneyStatusPaused:
		return nil, Conflict("the journey is already paused")
	default:
		return nil, Conflict("a %s journey cannot be paused", j.Status)
	}
	return &JourneyPaused{JourneyID: journeyID, ShopID: shopID, Reason: PauseManual, PausedAt: now.UTC()}, nil
}

// Resume decides a merchant's resume of a paused journey (whatever paused
// it): it is active again, even when a template that paused it is still
// paused (the merchant decides; the template's next pause pauses it
// again). Resuming a journey that is not paused is a conflict.
func (j *Journey) Resume(shopID, journeyID string, now time.Time) (*JourneyResumed, error) {
	if !j.Exists || j.ShopID != shopID {
		return nil, NotFound("journey")
	}
	if j.Status != JourneyStatusPaused {
		return nil, Conflict("only a paused journey can be resumed (status %s)", j.Status)
	}
	return &JourneyResumed{JourneyID: journeyID, ShopID: shopID, Reason: ResumeManual, ResumedAt: now.UTC()}, nil
}

// ReactToTemplate decides what a change of a message template does to the
// journey; nil when nothing: no WhatsApp step uses the template, the
// template event was handled already, or the state does not apply. A
// paused or rejected template pauses an active journey; an approved one
// resumes a journey that this template paused (never one the merchant
// paused).
func (j *Journey) ReactToTemplate(shopID, journeyID string, t TemplateChange, now time.Time) (Event, error) {
	if !j.Exists || j.ShopID != shopID {
		return nil, NotFound("journey")
	}
	if t.EventID == "" || j.handled[t.EventID] || !j.UsesTemplate(t.TemplateID, t.Name) {
		return nil, nil
	}
	if reason := t.pauseReason(); reason != "" {
		if j.Status != JourneyStatusActive {
			return nil, nil
		}
		return &JourneyPaused{JourneyID: journeyID, ShopID: shopID, Reason: reason, TemplateID: t.TemplateID,
			TemplateEventID: t.EventID, PausedAt: now.UTC()}, nil
	}
	if t.State == TemplateApproved && j.Status == JourneyStatusPaused && autoPaused(j.PausedReason, j.PausedBy, t.TemplateID) {
		return &JourneyResumed{JourneyID: journeyID, ShopID: shopID, Reason: ResumeTemplateApproved, TemplateID: t.TemplateID,
			TemplateEventID: t.EventID, ResumedAt: now.UTC()}, nil
	}
	return nil, nil
}
