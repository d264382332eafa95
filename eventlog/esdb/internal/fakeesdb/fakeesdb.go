package fakeesdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/protos/shared"
	api "github.com/EventStore/EventStore-Client-Go/v4/protos/streams"
	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// Record is an event as the fake stores it.
type Record struct {
	ID          uuid.UUID
	Stream      string
	Revision    uint64
	Type        string
	ContentType string
	Data        []byte
	Metadata    []byte
	Created     time.Time
	Pos         uint64 // commit = prepare position
	End         uint64 // offset just after the record
}

// Server is a running fake node. Its methods are safe for concurrent use.
type Server struct {
	api.UnimplementedStreamsServer

	addr string

	srvMu sync.Mutex
	srv   *grpc.Server
	done  chan struct{} // closed when the current Serve returns

	mu           sync.Mutex
	all          []*Record
	byPos        map[uint64]int // record position -> index in all
	streams      map[string][]*Record
	nextPos      uint64
	userAppends  int
	changed      chan struct{} // closed and replaced on every write
	systemEvery  int
	failAppends  int
	dropAfter    int
	beforeAppend func(stream string)
	subscribes   []string // start of every subscription, for assertions
}

// Start listens on a free local port and serves until Stop.
func Start() (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake esdb: listen: %w", err)
	}
	s := &Server{
		addr:        lis.Addr().String(),
		streams:     make(map[string][]*Record),
		byPos:       make(map[uint64]int),
		nextPos:     1000,
		changed:     make(chan struct{}),
		systemEvery: 2,
	}
	// What a fresh node holds before anyone writes.
	s.mu.Lock()
	s.write("$users", uuid.New(), "$User", "application/json", []byte(`{}`), nil)
	s.write("$stats-fake", uuid.New(), "$statsCollected", "application/json", []byte(`{}`), nil)
	s.mu.Unlock()
	s.serve(lis)
	return s, nil
}

func (s *Server) serve(lis net.Listener) {
	srv := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
		MinTime:             time.Second, // the client pings every 10 s
		PermitWithoutStream: true,
	}))
	api.RegisterStreamsServer(srv, s)
	done := make(chan struct{})
	s.srvMu.Lock()
	s.srv, s.done = srv, done
	s.srvMu.Unlock()
	// Exits when Stop stops srv.
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
}

// URL is the connection string of the fake, plaintext.
func (s *Server) URL() string { return "esdb://" + s.addr + "?tls=false" }

// Addr is the host:port the fake listens on.
func (s *Server) Addr() string { return s.addr }

// Stop closes every connection and stream and stops listening; the data
// is kept for Restart.
func (s *Server) Stop() {
	s.srvMu.Lock()
	srv, done := s.srv, s.done
	s.srv = nil
	s.srvMu.Unlock()
	if srv != nil {
		srv.Stop()
		<-done
	}
}

// Restart serves again on the same address after Stop.
func (s *Server) Restart() error {
	lis, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("fake esdb: listen again: %w", err)
	}
	s.serve(lis)
	return nil
}

// FailAppends makes the next n appends fail with codes.Unavailable.
func (s *Server) FailAppends(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failAppends = n
}

// DropSubscriptionsAfter makes every subscription fail with
// codes.Unavailable after it has sent n events (0: never).
func (s *Server) DropSubscriptionsAfter(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropAfter = n
}

// SystemEvery writes a system event after every n user appends (0: never).
func (s *Server) SystemEvery(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.systemEvery = n
}

// BeforeAppend installs f, called with the stream of every append before it
// takes effect (nil removes it). f may call AppendRaw to play a concurrent
// writer.
func (s *Server) BeforeAppend(f func(stream string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeAppend = f
}

// AppendRaw writes one event as another client would, without any
// expectation, and returns it.
func (s *Server) AppendRaw(stream string, id uuid.UUID, eventType string, data, metadata []byte) Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.write(stream, id, eventType, "application/octet-stream", data, metadata)
}

// Stream returns a copy of the events of stream.
func (s *Server) Stream(stream string) []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, len(s.streams[stream]))
	for i, r := range s.streams[stream] {
		out[i] = *r
	}
	return out
}

// SubscriptionStarts lists where each subscription started ("start",
// "end", or "commit/prepare"), in order.
func (s *Server) SubscriptionStarts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.subscribes...)
}

// write appends a record; the caller holds s.mu.
func (s *Server) write(stream string, id uuid.UUID, eventType, contentType string, data, metadata []byte) *Record {
	size := uint64(64 + len(stream) + len(eventType) + len(data) + len(metadata))
	r := &Record{
		ID:          id,
		Stream:      stream,
		Revision:    uint64(len(s.streams[stream])),
		Type:        eventType,
		ContentType: contentType,
		Data:        append([]byte(nil), data...),
		Metadata:    append([]byte(nil), metadata...),
		Created:     time.Now().UTC(),
		Pos:         s.nextPos,
		End:         s.nextPos + size,
	}
	s.nextPos = r.End
	s.byPos[r.Pos] = len(s.all)
	s.all = append(s.all, r)
	s.streams[stream] = append(s.streams[stream], r)
	close(s.changed)
	s.changed = make(chan struct{})
	return r
}

// Append implements the Streams.Append RPC.
func (s *Server) Append(stream api.Streams_AppendServer) error {
	first, err := stream.Recv()
	if err != nil {
		return err
	}
	opts := first.GetOptions()
	if opts == nil {
		return status.Error(codes.InvalidArgument, "first message must be options")
	}
	var msgs []*api.AppendReq_ProposedMessage
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		msg := req.GetProposedMessage()
		if msg == nil {
			return status.Error(codes.InvalidArgument, "expected a proposed message")
		}
		msgs = append(msgs, msg)
	}
	name := string(opts.GetStreamIdentifier().GetStreamName())

	s.mu.Lock()
	hook := s.beforeAppend
	s.mu.Unlock()
	if hook != nil {
		hook(name)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAppends > 0 {
		s.failAppends--
		return status.Error(codes.Unavailable, "fake esdb: append failed (injected)")
	}
	resp, err := s.appendLocked(name, opts, msgs)
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

func (s *Server) appendLocked(name string, opts *api.AppendReq_Options, msgs []*api.AppendReq_ProposedMessage) (*api.AppendResp, error) {
	recs := s.streams[name]
	current := int64(len(recs)) - 1 // -1: no stream
	expected := int64(-2)           // any
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Any:
	case *api.AppendReq_Options_NoStream:
		expected = -1
	case *api.AppendReq_Options_StreamExists:
		expected = -4
	case *api.AppendReq_Options_Revision:
		expected = int64(e.Revision)
	default:
		return nil, status.Error(codes.InvalidArgument, "missing expected revision")
	}
	ids := make([]uuid.UUID, len(msgs))
	for i, m := range msgs {
		id, err := uuidFromProto(m.GetId())
		if err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		ids[i] = id
	}
	ok := expected == -2 || expected == current || (expected == -4 && current >= 0)
	if !ok && expected >= -1 && expected < current && len(ids) > 0 {
		// The server's idempotency: the same ids already follow the
		// expected revision.
		if last, same := idempotent(recs, expected, ids); same {
			return successResp(int64(last.Revision), last.Pos), nil
		}
	}
	if !ok {
		return wrongExpected(opts, current), nil
	}
	var last *Record
	for i, m := range msgs {
		last = s.write(name, ids[i], m.GetMetadata()["type"], m.GetMetadata()["content-type"], m.GetData(), m.GetCustomMetadata())
	}
	if last == nil {
		if current < 0 {
			return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
				CurrentRevisionOption: &api.AppendResp_Success_NoStream{NoStream: &shared.Empty{}},
				PositionOption:        &api.AppendResp_Success_NoPosition{NoPosition: &shared.Empty{}},
			}}}, nil
		}
		return successResp(current, recs[current].Pos), nil
	}
	if !strings.HasPrefix(name, "$") {
		s.userAppends++
		if s.systemEvery > 0 && s.userAppends%s.systemEvery == 0 {
			// Alternate a system event type with a system stream whose event
			// type passes a type filter.
			if (s.userAppends/s.systemEvery)%2 == 1 {
				s.write("$stats-fake", uuid.New(), "$statsCollected", "application/json", []byte(`{}`), nil)
			} else {
				s.write("$projections-fake", uuid.New(), "ProjectionUpdated", "application/json", []byte(`{}`), nil)
			}
		}
	}
	return successResp(int64(last.Revision), last.Pos), nil
}

func idempotent(recs []*Record, expected int64, ids []uuid.UUID) (*Record, bool) {
	start := expected + 1
	if start+int64(len(ids)) > int64(len(recs)) {
		return nil, false
	}
	for i, id := range ids {
		if recs[start+int64(i)].ID != id {
			return nil, false
		}
	}
	return recs[start+int64(len(ids))-1], true
}

func successResp(revision int64, pos uint64) *api.AppendResp {
	return &api.AppendResp{Result: &api.AppendResp_Success_{Success: &api.AppendResp_Success{
		CurrentRevisionOption: &api.AppendResp_Success_CurrentRevision{CurrentRevision: uint64(revision)},
		PositionOption: &api.AppendResp_Success_Position{Position: &api.AppendResp_Position{
			CommitPosition: pos, PreparePosition: pos,
		}},
	}}}
}

func wrongExpected(opts *api.AppendReq_Options, current int64) *api.AppendResp {
	w := &api.AppendResp_WrongExpectedVersion{}
	switch e := opts.GetExpectedStreamRevision().(type) {
	case *api.AppendReq_Options_Any:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedAny{ExpectedAny: &shared.Empty{}}
	case *api.AppendReq_Options_NoStream:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedNoStream{ExpectedNoStream: &shared.Empty{}}
	case *api.AppendReq_Options_StreamExists:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedStreamExists{ExpectedStreamExists: &shared.Empty{}}
	case *api.AppendReq_Options_Revision:
		w.ExpectedRevisionOption = &api.AppendResp_WrongExpectedVersion_ExpectedRevision{ExpectedRevision: e.Revision}
	}
	if current < 0 {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentNoStream{CurrentNoStream: &shared.Empty{}}
	} else {
		w.CurrentRevisionOption = &api.AppendResp_WrongExpectedVersion_CurrentRevision{CurrentRevision: uint64(current)}
	}
	return &api.AppendResp{Result: &api.AppendResp_WrongExpectedVersion_{WrongExpectedVersion: w}}
}

// Read implements the Streams.Read RPC: stream reads, $all reads and $all
// subscriptions.
func (s *Server) Read(req *api.ReadReq, srv api.Streams_ReadServer) error {
	o := req.GetOptions()
	if o == nil {
		return status.Error(codes.InvalidArgument, "missing options")
	}
	_, subscription := o.GetCountOption().(*api.ReadReq_Options_Subscription)
	switch so := o.GetStreamOption().(type) {
	case *api.ReadReq_Options_Stream:
		if subscription {
			return status.Error(codes.Unimplemented, "fake esdb: stream subscriptions are not modelled")
		}
		return s.readStream(so.Stream, o.GetReadDirection(), o.GetCount(), srv)
	case *api.ReadReq_Options_All:
		if subscription {
			return s.subscribeAll(so.All, o.GetFilter(), srv)
		}
		return s.readAll(so.All, o.GetReadDirection(), o.GetCount(), srv)
	default:
		return status.Error(codes.InvalidArgument, "missing stream option")
	}
}

func (s *Server) readStream(so *api.ReadReq_Options_StreamOptions, dir api.ReadReq_Options_ReadDirection, count uint64, srv api.Streams_ReadServer) error {
	name := string(so.GetStreamIdentifier().GetStreamName())
	s.mu.Lock()
	recs := s.streams[name]
	s.mu.Unlock()
	if len(recs) == 0 {
		return srv.Send(&api.ReadResp{Content: &api.ReadResp_StreamNotFound_{StreamNotFound: &api.ReadResp_StreamNotFound{
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(name)},
		}}})
	}
	var out []*Record
	if dir == api.ReadReq_Options_Forwards {
		start := uint64(len(recs))
		switch r := so.GetRevisionOption().(type) {
		case *api.ReadReq_Options_StreamOptions_Start:
			start = 0
		case *api.ReadReq_Options_StreamOptions_Revision:
			start = r.Revision
		}
		for i := start; i < uint64(len(recs)) && uint64(len(out)) < count; i++ {
			out = append(out, recs[i])
		}
	} else {
		start := int64(-1)
		switch r := so.GetRevisionOption().(type) {
		case *api.ReadReq_Options_StreamOptions_End:
			start = int64(len(recs)) - 1
		case *api.ReadReq_Options_StreamOptions_Revision:
			start = min(int64(r.Revision), int64(len(recs))-1)
		}
		for i := start; i >= 0 && uint64(len(out)) < count; i-- {
			out = append(out, recs[i])
		}
	}
	for _, r := range out {
		if err := srv.Send(eventResp(r)); err != nil {
			return err
		}
	}
	return nil
}

// chunkSize is the server's default chunk size: chunk starts are record
// boundaries.
const chunkSize = 256 << 20

// errInvalidPosition is what the server answers for a read from the middle
// of a record.
var errInvalidPosition = status.Error(codes.InvalidArgument, "Trying to read from an invalid position.")

// validAt reports whether (commit, prepare) is a record boundary; the
// caller holds s.mu.
func (s *Server) validAt(commit, prepare uint64) bool {
	if commit != prepare {
		return false
	}
	if _, ok := s.byPos[commit]; ok {
		return true
	}
	return commit == s.nextPos || commit%chunkSize == 0
}

func (s *Server) readAll(ao *api.ReadReq_Options_AllOptions, dir api.ReadReq_Options_ReadDirection, count uint64, srv api.Streams_ReadServer) error {
	s.mu.Lock()
	all := s.all
	if p := ao.GetPosition(); p != nil && !s.validAt(p.GetCommitPosition(), p.GetPreparePosition()) {
		s.mu.Unlock()
		return errInvalidPosition
	}
	s.mu.Unlock()
	var out []*Record
	if dir == api.ReadReq_Options_Forwards {
		start := len(all)
		switch a := ao.GetAllOption().(type) {
		case *api.ReadReq_Options_AllOptions_Start:
			start = 0
		case *api.ReadReq_Options_AllOptions_Position:
			// Inclusive: records at or after (commit, prepare).
			start = firstAtOrAfter(all, a.Position.GetCommitPosition(), a.Position.GetPreparePosition())
		}
		for i := start; i < len(all) && uint64(len(out)) < count; i++ {
			out = append(out, all[i])
		}
	} else {
		start := -1
		switch a := ao.GetAllOption().(type) {
		case *api.ReadReq_Options_AllOptions_End:
			start = len(all) - 1
		case *api.ReadReq_Options_AllOptions_Position:
			// Exclusive: records ending at or before the position.
			p := a.Position
			for i := len(all) - 1; i >= 0; i-- {
				if !tfLess(p.GetCommitPosition(), p.GetPreparePosition(), all[i].End, all[i].End) {
					start = i
					break
				}
			}
		}
		for i := start; i >= 0 && uint64(len(out)) < count; i-- {
			out = append(out, all[i])
		}
	}
	for _, r := range out {
		if err := srv.Send(eventResp(r)); err != nil {
			return err
		}
	}
	return nil
}

// tfLess orders (commit, prepare) pairs the server's way.
func tfLess(c1, p1, c2, p2 uint64) bool {
	return c1 < c2 || (c1 == c2 && p1 < p2)
}

func firstAtOrAfter(all []*Record, commit, prepare uint64) int {
	for i, r := range all {
		if !tfLess(r.Pos, r.Pos, commit, prepare) {
			return i
		}
	}
	return len(all)
}

func (s *Server) subscribeAll(ao *api.ReadReq_Options_AllOptions, filter *api.ReadReq_Options_FilterOptions, srv api.Streams_ReadServer) error {
	match, err := compileFilter(filter)
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	s.mu.Lock()
	idx := 0
	var from string
	invalid := false
	switch a := ao.GetAllOption().(type) {
	case *api.ReadReq_Options_AllOptions_Start:
		from = "start"
	case *api.ReadReq_Options_AllOptions_End:
		idx, from = len(s.all), "end"
	case *api.ReadReq_Options_AllOptions_Position:
		c, p := a.Position.GetCommitPosition(), a.Position.GetPreparePosition()
		from = fmt.Sprintf("%d/%d", c, p)
		invalid = !s.validAt(c, p)
		// Exclusive: the first record after (commit, prepare).
		idx = len(s.all)
		for i, r := range s.all {
			if tfLess(c, p, r.Pos, r.Pos) {
				idx = i
				break
			}
		}
	}
	s.subscribes = append(s.subscribes, from)
	dropAfter := s.dropAfter
	s.mu.Unlock()

	if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_Confirmation{Confirmation: &api.ReadResp_SubscriptionConfirmation{
		SubscriptionId: uuid.NewString(),
	}}}); err != nil {
		return err
	}
	if invalid {
		return errInvalidPosition
	}
	sent, skipped, caughtUp := 0, 0, false
	for {
		s.mu.Lock()
		recs, changed := s.all[idx:], s.changed
		s.mu.Unlock()
		for _, r := range recs {
			idx++
			if !match(r) {
				skipped++
				if filter != nil && skipped%32 == 0 {
					if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_Checkpoint_{Checkpoint: &api.ReadResp_Checkpoint{
						CommitPosition: r.Pos, PreparePosition: r.Pos,
					}}}); err != nil {
						return err
					}
				}
				continue
			}
			if err := srv.Send(eventResp(r)); err != nil {
				return err
			}
			sent++
			if dropAfter > 0 && sent >= dropAfter {
				return status.Error(codes.Unavailable, "fake esdb: subscription dropped (injected)")
			}
		}
		if !caughtUp {
			caughtUp = true
			if err := srv.Send(&api.ReadResp{Content: &api.ReadResp_CaughtUp_{CaughtUp: &api.ReadResp_CaughtUp{}}}); err != nil {
				return err
			}
		}
		select {
		case <-changed:
		case <-srv.Context().Done():
			return srv.Context().Err()
		}
	}
}

func compileFilter(f *api.ReadReq_Options_FilterOptions) (func(*Record) bool, error) {
	if f == nil {
		return func(*Record) bool { return true }, nil
	}
	var expr *api.ReadReq_Options_FilterOptions_Expression
	onType := false
	switch x := f.GetFilter().(type) {
	case *api.ReadReq_Options_FilterOptions_EventType:
		expr, onType = x.EventType, true
	case *api.ReadReq_Options_FilterOptions_StreamIdentifier:
		expr = x.StreamIdentifier
	default:
		return nil, errors.New("filter without expression")
	}
	field := func(r *Record) string {
		if onType {
			return r.Type
		}
		return r.Stream
	}
	if expr.GetRegex() != "" {
		re, err := regexp.Compile(expr.GetRegex())
		if err != nil {
			return nil, fmt.Errorf("filter regex: %w", err)
		}
		return func(r *Record) bool { return re.MatchString(field(r)) }, nil
	}
	prefixes := expr.GetPrefix()
	return func(r *Record) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(field(r), p) {
				return true
			}
		}
		return false
	}, nil
}

func eventResp(r *Record) *api.ReadResp {
	most := int64(binary.BigEndian.Uint64(r.ID[:8]))
	least := int64(binary.BigEndian.Uint64(r.ID[8:]))
	return &api.ReadResp{Content: &api.ReadResp_Event{Event: &api.ReadResp_ReadEvent{
		Event: &api.ReadResp_ReadEvent_RecordedEvent{
			Id: &shared.UUID{Value: &shared.UUID_Structured_{Structured: &shared.UUID_Structured{
				MostSignificantBits: most, LeastSignificantBits: least,
			}}},
			StreamIdentifier: &shared.StreamIdentifier{StreamName: []byte(r.Stream)},
			StreamRevision:   r.Revision,
			PreparePosition:  r.Pos,
			CommitPosition:   r.Pos,
			Metadata: map[string]string{
				"type":         r.Type,
				"content-type": r.ContentType,
				// .NET ticks (100 ns) since the Unix epoch.
				"created": strconv.FormatInt(r.Created.UnixNano()/100, 10),
			},
			CustomMetadata: r.Metadata,
			Data:           r.Data,
		},
		Position: &api.ReadResp_ReadEvent_CommitPosition{CommitPosition: r.Pos},
	}}}
}

func uuidFromProto(u *shared.UUID) (uuid.UUID, error) {
	if st := u.GetStructured(); st != nil {
		var id uuid.UUID
		binary.BigEndian.PutUint64(id[:8], uint64(st.GetMostSignificantBits()))
		binary.BigEndian.PutUint64(id[8:], uint64(st.GetLeastSignificantBits()))
		return id, nil
	}
	id, err := uuid.Parse(u.GetString_())
	if err != nil {
		return uuid.Nil, fmt.Errorf("event id: %w", err)
	}
	return id, nil
}
