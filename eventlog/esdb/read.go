package esdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	es "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/cgp-platform/cgp/eventlog"
)

// Page sizes of $all reads. ReadAll asks for a little more than it needs
// because events that are not ours (system events, other namespaces) are
// interleaved and skipped. HeadPosition starts small (the last event is
// usually ours) and grows its pages while it finds none of ours.
const (
	minAllPage  = 64
	maxAllPage  = 1024
	headAllPage = 64
	maxHeadPage = 4096
)

// readStream reads up to count events of the server stream name with opts
// and decodes them. A stream that does not exist yields no events.
func (l *Log) readStream(ctx context.Context, c *es.Client, name string, opts es.ReadStreamOptions, count int) ([]eventlog.Event, error) {
	return clientCall(ctx, l, c, func() ([]eventlog.Event, error) {
		rs, err := c.ReadStream(ctx, name, opts, uint64(count))
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		defer rs.Close()
		var out []eventlog.Event
		for {
			re, err := rs.Recv()
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			if err != nil {
				if isNotFound(err) {
					return nil, nil
				}
				return nil, err
			}
			e, err := l.codec.decode(re.OriginalEvent())
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	})
}

// ReadStream returns up to limit events of stream in revision order from
// revision from (inclusive). A stream that does not exist yields no events.
func (l *Log) ReadStream(ctx context.Context, stream string, from uint64, limit int) ([]eventlog.Event, error) {
	op := "read stream " + stream
	if err := validateStream(stream); err != nil {
		return nil, fmt.Errorf("read stream: %w", err)
	}
	c, done, err := l.begin()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	events, err := l.readStream(ctx, c, l.codec.server(stream), es.ReadStreamOptions{From: es.Revision(from)}, limit)
	if err != nil {
		l.noteErr(c, err)
		return nil, wrapErr(ctx, op, err)
	}
	return events, nil
}

// ReadAll returns up to limit events with Position > after in position
// order, skipping events that are not ours (system events, other
// namespaces).
func (l *Log) ReadAll(ctx context.Context, after eventlog.Position, limit int) ([]eventlog.Event, error) {
	const op = "read all"
	c, done, err := l.begin()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	if limit <= 0 {
		return nil, nil
	}
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	out, err := l.readAll(ctx, c, newCursor(after), limit)
	if err != nil {
		l.noteErr(c, err)
		return nil, wrapErr(ctx, op, err)
	}
	return out, nil
}

func (l *Log) readAll(ctx context.Context, c *es.Client, cur cursor, limit int) ([]eventlog.Event, error) {
	page := min(max(limit+1, minAllPage), maxAllPage)
	var out []eventlog.Event
	for len(out) < limit {
		from, want := cur, limit-len(out) // the call gets its own copies
		p, err := clientCall(ctx, l, c, func() (allPage, error) {
			return l.readAllPage(ctx, c, from, page, want)
		})
		if err != nil {
			if isInvalidPosition(err) && cur.retreat() {
				continue
			}
			return nil, err
		}
		out, cur = append(out, p.events...), p.cur
		if p.records < page { // end of $all
			break
		}
	}
	return out, nil
}

// allPage is the outcome of reading one page of $all.
type allPage struct {
	events  []eventlog.Event // ours and new, at most the wanted number
	cur     cursor           // after the last record handled
	records int              // records received; page when stopped early
}

// readAllPage reads one page of $all forwards from cur (inclusive: the
// cursor's own event comes back and is skipped) and keeps up to want of our
// new events.
func (l *Log) readAllPage(ctx context.Context, c *es.Client, cur cursor, page, want int) (allPage, error) {
	rs, err := c.ReadAll(ctx, es.ReadAllOptions{Direction: es.Forwards, From: cur.from()}, uint64(page))
	if err != nil {
		return allPage{}, err
	}
	defer rs.Close()
	p := allPage{cur: cur}
	for len(p.events) < want {
		re, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return p, nil
		}
		if err != nil {
			return allPage{}, err
		}
		p.records++
		rec := re.OriginalEvent()
		_, isNew, err := p.cur.admit(rec.Position)
		if err != nil {
			return allPage{}, fmt.Errorf("event %s@%d: %w", rec.StreamID, rec.EventNumber, err)
		}
		if !isNew || !l.codec.belongs(rec.StreamID, rec.EventType) {
			continue
		}
		e, err := l.codec.decode(rec)
		if err != nil {
			return allPage{}, err
		}
		p.events = append(p.events, e)
	}
	p.records = page
	return p, nil
}

// HeadPosition returns the position of the last event of our log (0 when it
// has none). It reads $all backwards past events that are not ours: the very
// last record of $all is usually a $stats event, and a position no
// subscriber ever receives must not be reported as the head.
func (l *Log) HeadPosition(ctx context.Context) (eventlog.Position, error) {
	const op = "head position"
	c, done, err := l.begin()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	pos, err := l.headPosition(ctx, c)
	if err != nil {
		l.noteErr(c, err)
		return 0, wrapErr(ctx, op, err)
	}
	return pos, nil
}

func (l *Log) headPosition(ctx context.Context, c *es.Client) (eventlog.Position, error) {
	var from es.AllPosition = es.End{}
	for page := headAllPage; ; page = min(4*page, maxHeadPage) {
		from, page := from, page // the call gets its own copies
		h, err := clientCall(ctx, l, c, func() (headResult, error) { return l.headPage(ctx, c, from, page) })
		if err != nil || h.found {
			return h.pos, err
		}
		if h.records < page {
			return 0, nil
		}
		from = h.next
	}
}

// headResult is the outcome of reading one page of $all backwards.
type headResult struct {
	pos     eventlog.Position // of the first event of ours, if found
	found   bool
	next    es.Position // where to continue
	records int
}

// headPage reads one page of $all backwards from `from` (exclusive) and
// finds the first event of ours, or where to continue.
func (l *Log) headPage(ctx context.Context, c *es.Client, from es.AllPosition, page int) (headResult, error) {
	rs, err := c.ReadAll(ctx, es.ReadAllOptions{Direction: es.Backwards, From: from}, uint64(page))
	if err != nil {
		return headResult{}, err
	}
	defer rs.Close()
	var h headResult
	for {
		re, err := rs.Recv()
		if errors.Is(err, io.EOF) {
			return h, nil
		}
		if err != nil {
			return headResult{}, err
		}
		h.records++
		rec := re.OriginalEvent()
		h.next = rec.Position
		if !l.codec.belongs(rec.StreamID, rec.EventType) {
			continue
		}
		if h.pos, err = toPosition(rec.Position); err != nil {
			return headResult{}, fmt.Errorf("event %s@%d: %w", rec.StreamID, rec.EventNumber, err)
		}
		h.found = true
		return h, nil
	}
}

// StreamMetadata returns the custom properties of the stream's metadata
// (nil when none). Values stored by others as non-strings come back as
// their JSON text.
func (l *Log) StreamMetadata(ctx context.Context, stream string) (map[string]string, error) {
	op := "stream metadata of " + stream
	if err := validateStream(stream); err != nil {
		return nil, fmt.Errorf("stream metadata: %w", err)
	}
	c, done, err := l.begin()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	meta, err := l.streamMetadata(ctx, c, l.codec.server(stream))
	if err != nil {
		l.noteErr(c, err)
		return nil, wrapErr(ctx, op, err)
	}
	return customProperties(meta)
}

// streamMetadata reads the latest metadata of the server stream name; nil
// when it has none.
func (l *Log) streamMetadata(ctx context.Context, c *es.Client, name string) (*es.StreamMetadata, error) {
	return clientCall(ctx, l, c, func() (*es.StreamMetadata, error) {
		// The client reads the metadata stream with the options given:
		// without them it would return the oldest metadata event, not the
		// current one.
		meta, err := c.GetStreamMetadata(ctx, name, es.ReadStreamOptions{Direction: es.Backwards, From: es.End{}})
		if err != nil {
			if isNotFound(err) {
				return nil, nil
			}
			return nil, err
		}
		return meta, nil
	})
}

// customProperties converts the custom properties of meta to the port's map.
func customProperties(meta *es.StreamMetadata) (map[string]string, error) {
	if meta == nil || len(meta.CustomProperties()) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(meta.CustomProperties()))
	for k, v := range meta.CustomProperties() {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("stream metadata property %q: %w", k, err)
		}
		out[k] = string(b)
	}
	return out, nil
}

// withCustomProperties returns stream metadata that keeps cur's system
// settings (max count and age, truncate-before, cache control, ACL: an
// operator may have set them) and has exactly props as custom properties.
func withCustomProperties(cur *es.StreamMetadata, props map[string]string) (es.StreamMetadata, error) {
	var m es.StreamMetadata
	if cur != nil {
		if v := cur.MaxCount(); v != nil {
			m.SetMaxCount(*v)
		}
		if v := cur.MaxAge(); v != nil {
			m.SetMaxAge(*v)
		}
		if v := cur.TruncateBefore(); v != nil {
			m.SetTruncateBefore(*v)
		}
		if v := cur.CacheControl(); v != nil {
			m.SetCacheControl(*v)
		}
		if v := cur.Acl(); v != nil {
			m.SetAcl(v)
		}
	}
	for k, v := range props {
		// The client silently drops '$' keys: they name system settings.
		if k == "" || strings.HasPrefix(k, "$") {
			return es.StreamMetadata{}, fmt.Errorf("metadata key %q: keys must be non-empty and not start with '$'", k)
		}
		m.AddCustomProperty(k, v)
	}
	return m, nil
}

// SetStreamMetadata replaces the custom properties of the stream's metadata
// with meta, keeping EventStoreDB's own settings of the stream.
func (l *Log) SetStreamMetadata(ctx context.Context, stream string, meta map[string]string) error {
	op := "set stream metadata of " + stream
	if err := validateStream(stream); err != nil {
		return fmt.Errorf("set stream metadata: %w", err)
	}
	c, done, err := l.begin()
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer done()
	if _, err := withCustomProperties(nil, meta); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	ctx, cancel := l.opContext(ctx)
	defer cancel()
	name := l.codec.server(stream)
	cur, err := l.streamMetadata(ctx, c, name)
	if err != nil {
		l.noteErr(c, err)
		return wrapErr(ctx, op, err)
	}
	next, err := withCustomProperties(cur, meta)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := clientCall(ctx, l, c, func() (*es.WriteResult, error) {
		return c.SetStreamMetadata(ctx, name, es.AppendToStreamOptions{ExpectedRevision: es.Any{}}, next)
	}); err != nil {
		l.noteErr(c, err)
		return wrapErr(ctx, op, err)
	}
	return nil
}
