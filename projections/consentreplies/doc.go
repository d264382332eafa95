// Package consentreplies is the consent-reply reactor (stable name
// "consent_replies"): it reads inbound WhatsApp texts and records a
// STOP-type reply as an unsubscription and a START-type reply as a
// subscription to WhatsApp marketing (domain.ReplyConsent), through the
// RecordConsent command keyed by the message event's id, so a
// redelivery, a restart from the checkpoint or a rebuild records nothing
// twice. Its Types name WhatsAppMessageReceived only: it decodes no other
// event, so customer webhooks cost it nothing. Any other text is no
// decision. As a reactor it is never replayed; it keeps no table.
//
// It imports domain, envelope and projections.
package consentreplies
