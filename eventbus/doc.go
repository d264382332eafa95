// Package eventbus carries the event log over watermill: a message.Subscriber
// that follows the log (eventlog.Log) in position order with ack gating and
// redelivery on Nack, a message.Publisher that appends to the log, the codec
// between a recorded event and a watermill message (EventFromMessage,
// MessageFromEvent), and a zerolog adapter for watermill's logger.
//
// A watermill topic is a filter over the log's global order: TopicAll
// ("$all") selects every event, CategoryTopic("customer") ("$ce-customer")
// the events of every stream of that category, and any other topic names a
// single stream ("customer-cus_…"). Publishing is allowed to a stream topic
// only.
//
// It imports the standard library, eventlog, watermill, zerolog and
// github.com/google/uuid; nothing else of ours.
package eventbus
