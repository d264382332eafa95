// Package conversations is the conversations read model (issue 18, point
// 3): its projector (stable name "conversations") folds the inbound
// WhatsApp messages and the conversation events into one conversation per
// shop and customer on WhatsApp (its queue ai_concierge, human or closed,
// assignee, last message and inbound times, unread inbound count) and its
// messages in both directions (inbound from the customer, outbound human
// replies with their sending outcome). The customer's WhatsApp identity
// and the texts are personal data: nulled when the customer is erased
// (CustomerErased), and every row goes with its shop (ShopErased).
// Queries serves the conversations API and `cgp gdpr verify`.
//
// It imports domain, envelope, eventlog, projections and readmodel.
package conversations
