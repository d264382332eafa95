package eventbus

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/eventlog"
)

// TopicAll is the topic of every event in the log.
const TopicAll = "$all"

// categoryPrefix starts a category topic, as in EventStoreDB's $ce- streams.
const categoryPrefix = "$ce-"

// CategoryTopic returns the topic of every stream of category
// ("customer" selects "customer-cus_…").
func CategoryTopic(category string) string { return categoryPrefix + category }

type topicKind uint8

const (
	topicAll topicKind = iota
	topicCategory
	topicStream
)

// Topic is a parsed topic: a filter over the events of the log.
type Topic struct {
	kind topicKind
	name string // category or stream id
}

// ParseTopic parses a topic: TopicAll, CategoryTopic(c), or a stream id.
func ParseTopic(topic string) (Topic, error) {
	switch {
	case topic == "":
		return Topic{}, errors.New("empty topic")
	case topic == TopicAll:
		return Topic{kind: topicAll}, nil
	case strings.HasPrefix(topic, categoryPrefix):
		c := strings.TrimPrefix(topic, categoryPrefix)
		if c == "" || strings.Contains(c, "-") {
			return Topic{}, fmt.Errorf("topic %q: bad category", topic)
		}
		return Topic{kind: topicCategory, name: c}, nil
	case strings.HasPrefix(topic, "$"):
		return Topic{}, fmt.Errorf("topic %q: unknown system topic", topic)
	default:
		return Topic{kind: topicStream, name: topic}, nil
	}
}

// Match reports whether e belongs to the topic.
func (t Topic) Match(e *eventlog.Event) bool {
	switch t.kind {
	case topicAll:
		return true
	case topicCategory:
		c, _, ok := strings.Cut(e.StreamID, "-")
		return ok && c == t.name
	default:
		return e.StreamID == t.name
	}
}
