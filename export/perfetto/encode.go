package perfetto

import (
	"sort"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/contend-dev/contend/recording"
)

// Field numbers of Perfetto's trace protos (protos/perfetto/trace in the
// Perfetto repository; all proto2), for the parts this package writes.
const (
	fTracePacket = 1 // Trace.packet

	fPacketTimestamp     = 8  // TracePacket.timestamp (uint64, ns)
	fPacketSequenceID    = 10 // TracePacket.trusted_packet_sequence_id
	fPacketTrackEvent    = 11 // TracePacket.track_event
	fPacketSequenceFlags = 13 // TracePacket.sequence_flags
	fPacketTrackDesc     = 60 // TracePacket.track_descriptor

	fTrackUUID    = 1 // TrackDescriptor.uuid
	fTrackName    = 2 // TrackDescriptor.name
	fTrackProcess = 3 // TrackDescriptor.process
	fTrackThread  = 4 // TrackDescriptor.thread
	fTrackParent  = 5 // TrackDescriptor.parent_uuid
	fTrackCounter = 8 // TrackDescriptor.counter

	fProcessPID  = 1 // ProcessDescriptor.pid
	fProcessName = 6 // ProcessDescriptor.process_name

	fThreadPID  = 1 // ThreadDescriptor.pid
	fThreadTID  = 2 // ThreadDescriptor.tid
	fThreadName = 5 // ThreadDescriptor.thread_name

	fCounterUnit = 3 // CounterDescriptor.unit

	fEventAnnotations = 4  // TrackEvent.debug_annotations
	fEventType        = 9  // TrackEvent.type
	fEventTrackUUID   = 11 // TrackEvent.track_uuid
	fEventCategories  = 22 // TrackEvent.categories
	fEventName        = 23 // TrackEvent.name
	fEventCounter     = 30 // TrackEvent.counter_value (int64)
	fEventFlowIDs     = 47 // TrackEvent.flow_ids (fixed64)
	fEventTermFlowIDs = 48 // TrackEvent.terminating_flow_ids (fixed64)
	fEventCallstack   = 55 // TrackEvent.callstack

	fCallstackFrames = 1 // TrackEvent.Callstack.frames
	fFrameFunction   = 1 // Callstack.Frame.function_name
	fFrameFile       = 2 // Callstack.Frame.source_file
	fFrameLine       = 3 // Callstack.Frame.line_number

	fAnnotationInt  = 4  // DebugAnnotation.int_value
	fAnnotationStr  = 6  // DebugAnnotation.string_value
	fAnnotationName = 10 // DebugAnnotation.name
)

// Enum values of the protos.
const (
	typeSliceBegin = 1 // TrackEvent.TYPE_SLICE_BEGIN
	typeSliceEnd   = 2 // TrackEvent.TYPE_SLICE_END
	typeInstant    = 3 // TrackEvent.TYPE_INSTANT
	typeCounter    = 4 // TrackEvent.TYPE_COUNTER

	unitCount = 2 // CounterDescriptor.UNIT_COUNT

	// seqIncrementalStateCleared (TracePacket.SEQ_INCREMENTAL_STATE_CLEARED)
	// on the first packet makes the sequence valid for track events.
	seqIncrementalStateCleared = 1
)

// sequenceID is the one packet sequence every packet is written on.
const sequenceID = 1

// category of every event, so the UI can filter contend's events.
const category = "contend"

// Encode returns t as a serialized Trace message: the track descriptors,
// then every event in time order (at one instant: flows' origins, slice
// ends, counters, instants, slice begins, so that adjacent slices of a
// track never overlap and a flow starts before it ends).
func (t *Trace) Encode() []byte {
	var out []byte
	first := true
	packet := func(fill func([]byte) []byte) {
		var p []byte
		p = protowire.AppendTag(p, fPacketSequenceID, protowire.VarintType)
		p = protowire.AppendVarint(p, sequenceID)
		if first {
			p = protowire.AppendTag(p, fPacketSequenceFlags, protowire.VarintType)
			p = protowire.AppendVarint(p, seqIncrementalStateCleared)
			first = false
		}
		p = fill(p)
		out = protowire.AppendTag(out, fTracePacket, protowire.BytesType)
		out = protowire.AppendBytes(out, p)
	}
	for _, tr := range t.Tracks {
		packet(func(p []byte) []byte { return appendMsg(p, fPacketTrackDesc, tr.descriptor) })
	}
	for _, e := range t.events() {
		packet(func(p []byte) []byte {
			p = protowire.AppendTag(p, fPacketTimestamp, protowire.VarintType)
			p = protowire.AppendVarint(p, uint64(e.ts))
			return appendMsg(p, fPacketTrackEvent, e.fill)
		})
	}
	return out
}

func (tr Track) descriptor(b []byte) []byte {
	b = appendUint(b, fTrackUUID, tr.UUID)
	if tr.Parent != 0 {
		b = appendUint(b, fTrackParent, tr.Parent)
	}
	switch tr.Kind {
	case TrackProcess:
		b = appendMsg(b, fTrackProcess, func(b []byte) []byte {
			b = appendUint(b, fProcessPID, uint64(tr.PID))
			return appendString(b, fProcessName, tr.Name)
		})
	case TrackThread:
		b = appendMsg(b, fTrackThread, func(b []byte) []byte {
			b = appendUint(b, fThreadPID, uint64(tr.PID))
			b = appendUint(b, fThreadTID, uint64(tr.TID))
			return appendString(b, fThreadName, tr.Name)
		})
	case TrackCounter:
		b = appendString(b, fTrackName, tr.Name)
		b = appendMsg(b, fTrackCounter, func(b []byte) []byte { return appendUint(b, fCounterUnit, unitCount) })
	default:
		b = appendString(b, fTrackName, tr.Name)
	}
	return b
}

// event is one TrackEvent to write at ts; rank orders events of one
// instant.
type event struct {
	ts   int64
	rank int
	fill func([]byte) []byte
}

// Ranks of events at one instant.
const (
	rankFlowOrigin = iota
	rankEnd
	rankCounter
	rankInstant
	rankBegin
)

func (t *Trace) events() []event {
	evs := make([]event, 0, 2*len(t.Slices)+len(t.Instants)+len(t.Counters))
	for i := range t.Slices {
		s := &t.Slices[i]
		evs = append(evs, event{s.Start, rankBegin, func(b []byte) []byte {
			b = appendUint(b, fEventType, typeSliceBegin)
			b = appendUint(b, fEventTrackUUID, s.Track)
			b = appendString(b, fEventCategories, category)
			b = appendString(b, fEventName, s.Name)
			b = appendArgs(b, s.Args)
			if len(s.Stack) > 0 {
				b = appendMsg(b, fEventCallstack, func(b []byte) []byte { return appendStack(b, s.Stack) })
			}
			return b
		}})
		evs = append(evs, event{s.End, rankEnd, func(b []byte) []byte {
			b = appendUint(b, fEventType, typeSliceEnd)
			b = appendUint(b, fEventTrackUUID, s.Track)
			return appendFlows(b, fEventTermFlowIDs, s.FlowsIn)
		}})
	}
	for i := range t.Instants {
		in := &t.Instants[i]
		rank := rankInstant
		if len(in.FlowsOut) > 0 {
			rank = rankFlowOrigin
		}
		evs = append(evs, event{in.T, rank, func(b []byte) []byte {
			b = appendUint(b, fEventType, typeInstant)
			b = appendUint(b, fEventTrackUUID, in.Track)
			b = appendString(b, fEventCategories, category)
			b = appendString(b, fEventName, in.Name)
			b = appendArgs(b, in.Args)
			return appendFlows(b, fEventFlowIDs, in.FlowsOut)
		}})
	}
	for i := range t.Counters {
		c := &t.Counters[i]
		evs = append(evs, event{c.T, rankCounter, func(b []byte) []byte {
			b = appendUint(b, fEventType, typeCounter)
			b = appendUint(b, fEventTrackUUID, c.Track)
			b = protowire.AppendTag(b, fEventCounter, protowire.VarintType)
			return protowire.AppendVarint(b, uint64(c.Value))
		}})
	}
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].ts != evs[j].ts {
			return evs[i].ts < evs[j].ts
		}
		return evs[i].rank < evs[j].rank
	})
	return evs
}

func appendArgs(b []byte, args []Arg) []byte {
	for _, a := range args {
		b = appendMsg(b, fEventAnnotations, func(b []byte) []byte {
			b = appendString(b, fAnnotationName, a.Name)
			if a.IsInt {
				b = protowire.AppendTag(b, fAnnotationInt, protowire.VarintType)
				return protowire.AppendVarint(b, uint64(a.Int))
			}
			return appendString(b, fAnnotationStr, a.Str)
		})
	}
	return b
}

// appendStack writes a leaf-first stack as Callstack frames, which run
// from the outermost frame to the innermost.
func appendStack(b []byte, st []recording.Frame) []byte {
	for i := len(st) - 1; i >= 0; i-- {
		f := st[i]
		b = appendMsg(b, fCallstackFrames, func(b []byte) []byte {
			b = appendString(b, fFrameFunction, f.Func)
			if f.File != "" {
				b = appendString(b, fFrameFile, f.File)
			}
			if f.Line > 0 {
				b = appendUint(b, fFrameLine, uint64(f.Line))
			}
			return b
		})
	}
	return b
}

// appendFlows writes flow ids as the repeated fixed64 field.
func appendFlows(b []byte, field protowire.Number, ids []uint64) []byte {
	for _, id := range ids {
		b = protowire.AppendTag(b, field, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, id)
	}
	return b
}

func appendUint(b []byte, field protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, field, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendMsg writes the message fill builds as field.
func appendMsg(b []byte, field protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, fill(nil))
}
