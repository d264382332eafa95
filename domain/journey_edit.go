package domain

import (
	"slices"
	"time"
)

// TriggerManual is the trigger topic of an enrollment made by hand
// through the admin API (POST /api/v1/journeys/{id}/enrollments).
const TriggerManual = "manual"

// JourneyUpdated: a merchant edited a journey (PATCH
// /api/v1/journeys/{id}). It carries the journey's whole new state and
// Version, 1 at creation and +1 per edit. Enrollments keep running the
// steps of the version they entered with (JourneyEnrollmentStarted
// .StepsVersion); new enrollments run the latest.
type JourneyUpdated struct {
	JourneyID    string        `json:"journey_id"`
	ShopID       string        `json:"shop_id"`
	Version      int           `json:"version"`
	Name         string        `json:"name"`
	Steps        []JourneyStep `json:"steps"`
	AllowReentry bool          `json:"allow_reentry"`
	Status       string        `json:"status"`
	UpdatedAt    time.Time     `json:"updated_at"`
}

// EventType implements Event.
func (JourneyUpdated) EventType() string { return "JourneyUpdated" }

// JourneyPatch is a merchant's edit of a journey: a nil member stays as
// it is.
type JourneyPatch struct {
	Name         *string
	Steps        *[]JourneyStep
	AllowReentry *bool
	Status       *string
}

// Update decides an edit of the journey. A journey of another shop is not
// found; an archived journey cannot be edited (409). Status moves draft →
// active, draft or active or paused → archived; paused and active are
// reached through pause and resume, so "paused" is a 422 and any other
// move (active → draft, paused → active) a 409. Invalid members are 422s
// naming the field. An edit that changes nothing records nothing (nil).
func (j *Journey) Update(shopID, journeyID string, p JourneyPatch, now time.Time) (*JourneyUpdated, error) {
	if !j.Exists || j.ShopID != shopID {
		return nil, NotFound("journey")
	}
	if j.Status == JourneyStatusArchived {
		return nil, Conflict("an archived journey cannot be edited")
	}
	ev := &JourneyUpdated{JourneyID: journeyID, ShopID: shopID, Version: j.Version + 1, Name: j.Name, Steps: j.Steps,
		AllowReentry: j.AllowReentry, Status: j.Status, UpdatedAt: now.UTC()}
	var err error
	if p.Name != nil {
		if ev.Name, err = catalogText("name", *p.Name, true); err != nil {
			return nil, err
		}
	}
	if p.Steps != nil {
		if ev.Steps, err = journeySteps(*p.Steps); err != nil {
			return nil, err
		}
	}
	if p.AllowReentry != nil {
		ev.AllowReentry = *p.AllowReentry
	}
	if p.Status != nil && *p.Status != j.Status {
		if ev.Status, err = j.nextStatus(*p.Status); err != nil {
			return nil, err
		}
	}
	if ev.Name == j.Name && ev.AllowReentry == j.AllowReentry && ev.Status == j.Status && stepsEqual(ev.Steps, j.Steps) {
		return nil, nil
	}
	return ev, nil
}

// nextStatus checks a status change asked through an edit.
func (j *Journey) nextStatus(to string) (string, error) {
	switch to {
	case JourneyStatusDraft, JourneyStatusActive, JourneyStatusArchived:
	case JourneyStatusPaused:
		return "", Invalid("status", "pause a journey with POST /api/v1/journeys/{id}/pause")
	default:
		return "", Invalid("status", "status must be one of draft, active, archived")
	}
	switch {
	case to == JourneyStatusArchived:
	case j.Status == JourneyStatusDraft && to == JourneyStatusActive:
	case j.Status == JourneyStatusPaused && to == JourneyStatusActive:
		return "", Conflict("a paused journey is made active with POST /api/v1/journeys/{id}/resume")
	default:
		return "", Conflict("a %s journey cannot become %s", j.Status, to)
	}
	return to, nil
}

func stepsEqual(a, b []JourneyStep) bool {
	return slices.EqualFunc(a, b, func(x, y JourneyStep) bool {
		return x.Type == y.Type && x.Hours == y.Hours && x.Channel == y.Channel && x.Template == y.Template &&
			x.Subject == y.Subject && x.Text == y.Text && x.HTML == y.HTML && x.Language == y.Language &&
			slices.Equal(x.Parameters, y.Parameters) && x.Condition == y.Condition && x.Tag == y.Tag && x.Otherwise == y.Otherwise
	})
}

// CanEnroll tells whether the journey takes a new enrollment by hand: not
// found for another shop's, a conflict unless it is active (a draft,
// paused or archived journey enrolls nobody).
func (j *Journey) CanEnroll(shopID string) error {
	if !j.Exists || j.ShopID != shopID {
		return NotFound("journey")
	}
	if j.Status != JourneyStatusActive {
		return Conflict("a %s journey enrolls nobody", j.Status)
	}
	return nil
}

// EnrollByHand decides an enrollment asked through the admin API, where
// the automatic rules' silent "nothing to do" is a 409 the merchant
// reads: the customer is in the journey now (its enrollment is active),
// or was before and the journey does not allow re-entry, or this request
// (its trigger event id, from the Idempotency-Key) enrolled already.
func (a *JourneyEnrollments) EnrollByHand(in Enrollment, now time.Time) (*JourneyEnrollmentStarted, error) {
	switch {
	case a.Triggers[in.TriggerEventID]:
		return nil, Conflict("this request enrolled the customer already")
	case a.Active != "":
		return nil, Conflict("the customer is already enrolled in this journey (enrollment %s is active)", a.Active)
	case a.Enrolled && !in.AllowReentry:
		return nil, Conflict("the customer was enrolled in this journey before and it does not allow re-entry")
	}
	in.TriggerTopic = TriggerManual
	return a.Enroll(in, now)
}
