package domain

import "time"

// Exit reasons the journey runner gives besides ExitConditionNotMet and
// ExitStep: the journey was archived while the enrollment ran.
const ExitJourneyArchived = "journey_archived"

// JourneyEnrollmentCompleted: an enrollment ran every step of its
// journey's version.
type JourneyEnrollmentCompleted struct {
	EnrollmentID string    `json:"enrollment_id"`
	JourneyID    string    `json:"journey_id"`
	ShopID       string    `json:"shop_id"`
	CustomerID   string    `json:"customer_id"`
	CompletedAt  time.Time `json:"completed_at"`
}

// EventType implements Event.
func (JourneyEnrollmentCompleted) EventType() string { return "JourneyEnrollmentCompleted" }

// Finish decides the end of the enrollment enrollmentID: completed, or
// exited for reason. Nil when that enrollment is not the active one (it
// ended already: the runner asking again after a crash records nothing).
func (a *JourneyEnrollments) Finish(shopID, journeyID, customerID, enrollmentID string, completed bool, reason string, now time.Time) Event {
	if a.Active == "" || a.Active != enrollmentID {
		return nil
	}
	if completed {
		return &JourneyEnrollmentCompleted{EnrollmentID: enrollmentID, JourneyID: journeyID, ShopID: shopID, CustomerID: customerID,
			CompletedAt: now.UTC()}
	}
	return &JourneyEnrollmentExited{EnrollmentID: enrollmentID, JourneyID: journeyID, ShopID: shopID, CustomerID: customerID,
		Reason: reason, ExitedAt: now.UTC()}
}

// JourneyMessageID is the id of the message of an enrollment's step: one
// message per step of an enrollment, whatever happens to the runner.
func JourneyMessageID(enrollmentID string, step int) string {
	return IDFromExternal(PrefixMessage, "journey_message", enrollmentID, itoa(step))
}
