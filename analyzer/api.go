package analyzer

import (
	"time"

	"github.com/contend-dev/contend/analyzer/core"
	"github.com/contend-dev/contend/analyzer/live"
	"github.com/contend-dev/contend/recording"
)

// The names below are the package's face: the result types and the
// helpers its callers (the renderers, the TUI, the agent, the exporters)
// use are defined in core and in the path packages, and re-exported here
// so that callers import package analyzer alone.

// Result types, verdict kinds, evidence kinds and confidences.
type (
	Confidence   = core.Confidence
	Evidence     = core.Evidence
	EvidenceKind = core.EvidenceKind
	Finding      = core.Finding
	IdleGroup    = core.IdleGroup
	Item         = core.Item
	Kind         = core.Kind
	LockID       = core.LockID
	Metric       = core.Metric
	Prediction   = core.Prediction
	LockRow      = core.LockRow
	Missing      = core.Missing
	PointRow     = core.PointRow
	ProgramPoint = core.ProgramPoint
	Result       = core.Result
	Suggestion   = core.Suggestion
	Target       = core.Target
	ThreadRow    = core.ThreadRow
	Series       = live.Series
)

// Verdict kinds, evidence kinds, confidences and the analysis bounds.
const (
	ConfidenceHigh       = core.ConfidenceHigh
	ConfidenceLow        = core.ConfidenceLow
	ConfidenceMedium     = core.ConfidenceMedium
	MetricCPU            = core.MetricCPU
	MetricThroughput     = core.MetricThroughput
	MetricWait           = core.MetricWait
	EvArrayMerge         = core.EvArrayMerge
	EvBlockWaits         = core.EvBlockWaits
	EvCallPaths          = core.EvCallPaths
	EvChain              = core.EvChain
	EvChainDump          = core.EvChainDump
	EvContendedSpan      = core.EvContendedSpan
	EvDumpHolderIO       = core.EvDumpHolderIO
	EvDumpReleasing      = core.EvDumpReleasing
	EvDumpSameMutex      = core.EvDumpSameMutex
	EvDumpSpread         = core.EvDumpSpread
	EvDumpUnseen         = core.EvDumpUnseen
	EvDumpWaiters        = core.EvDumpWaiters
	EvFutexWaits         = core.EvFutexWaits
	EvGoHoldBound        = core.EvGoHoldBound
	EvGoSpinCPU          = core.EvGoSpinCPU
	EvGoSpinDump         = core.EvGoSpinDump
	EvGoSpinRunnable     = core.EvGoSpinRunnable
	EvGoSpinYield        = core.EvGoSpinYield
	EvHandoffs           = core.EvHandoffs
	EvHandoffHolds       = core.EvHandoffHolds
	EvHolderIO           = core.EvHolderIO
	EvHolderPreempted    = core.EvHolderPreempted
	EvHotStripe          = core.EvHotStripe
	EvIOSite             = core.EvIOSite
	EvJVMParkWords       = core.EvJVMParkWords
	EvWriterStarved      = core.EvWriterStarved
	EvJavaDumpHolder     = core.EvJavaDumpHolder
	EvJavaDumpWaiters    = core.EvJavaDumpWaiters
	EvLatchHolderIO      = core.EvLatchHolderIO
	EvLatchReleaser      = core.EvLatchReleaser
	EvLatchWaits         = core.EvLatchWaits
	EvMutexRelease       = core.EvMutexRelease
	EvOwnerField         = core.EvOwnerField
	EvRunQueue           = core.EvRunQueue
	EvRunQueuePoints     = core.EvRunQueuePoints
	EvRunnableShare      = core.EvRunnableShare
	EvRuntimeLock        = core.EvRuntimeLock
	EvRuntimeLockUser    = core.EvRuntimeLockUser
	EvSectionCPU         = core.EvSectionCPU
	EvSectionIOCPU       = core.EvSectionIOCPU
	EvSectionIOSleep     = core.EvSectionIOSleep
	EvShortHolds         = core.EvShortHolds
	EvSpinBeforePark     = core.EvSpinBeforePark
	EvSpinCPU            = core.EvSpinCPU
	EvSpinLoop           = core.EvSpinLoop
	EvSpinPark           = core.EvSpinPark
	EvSpinRunnable       = core.EvSpinRunnable
	EvSpinRunq           = core.EvSpinRunq
	EvTightLoop          = core.EvTightLoop
	EvTurnsDemand        = core.EvTurnsDemand
	EvTurnsHandoff       = core.EvTurnsHandoff
	EvTurnsTimeouts      = core.EvTurnsTimeouts
	EvWaitPoints         = core.EvWaitPoints
	EvWaitQuantiles      = core.EvWaitQuantiles
	EvWaitSpread         = core.EvWaitSpread
	EvWaiterCPU          = core.EvWaiterCPU
	EvWaitersDoIO        = core.EvWaitersDoIO
	EvWriterGroups       = core.EvWriterGroups
	EvWriterQueue        = core.EvWriterQueue
	EvYieldLoop          = core.EvYieldLoop
	EvKernelWaits        = core.EvKernelWaits
	EvKernelHolder       = core.EvKernelHolder
	EvPolledTries        = core.EvPolledTries
	EvPolledHolder       = core.EvPolledHolder
	KindCPUSaturation    = core.KindCPUSaturation
	KindContention       = core.KindContention
	KindHotStripe        = core.KindHotStripe
	KindWriterStarvation = core.KindWriterStarvation
	KindIOUnderLock      = core.KindIOUnderLock
	KindLockConvoy       = core.KindLockConvoy
	KindRuntimeLock      = core.KindRuntimeLock
	KindSerializedWriter = core.KindSerializedWriter
	KindSpinConvoy       = core.KindSpinConvoy
	KindKernelObjectLock = core.KindKernelObjectLock
	KindPolledLock       = core.KindPolledLock
	MaxAnalysisFrames    = core.MaxAnalysisFrames
	MaxRecordingDuration = core.MaxRecordingDuration
	MaxStackFrames       = core.MaxStackFrames
	SchemaVersion        = core.SchemaVersion
)

// EvidenceKinds lists every evidence kind (core.EvidenceKinds).
var EvidenceKinds = core.EvidenceKinds

// EvidenceText words one fact behind a verdict from its figures
// (core.EvidenceText).
func EvidenceText(e core.Evidence) string { return core.EvidenceText(e) }

// FillEvidenceText sets the Text of every evidence item of r
// (core.FillEvidenceText).
func FillEvidenceText(r *core.Result) { core.FillEvidenceText(r) }

// IdleCount is how many distinct threads or goroutines idle in groups
// (core.IdleCount).
func IdleCount(groups []core.IdleGroup) int { return core.IdleCount(groups) }

// LossLine is one line on what the probes of a live recording lost, ""
// when nothing was lost (live.LossLine).
func LossLine(m recording.Meta) string { return live.LossLine(m) }

// ShortFunc shortens a function name as the headlines do
// (core.ShortFunc).
func ShortFunc(fn string) string { return core.ShortFunc(fn) }

// LockAddrs returns the futex addresses of a lock: its folded words, or
// its address; none for a Go mutex (live.LockAddrs).
func LockAddrs(id core.LockID) []uint64 { return live.LockAddrs(id) }

// LockSeries returns, per window, the average number of threads blocked
// on the futex words in addrs (live.LockSeries).
func LockSeries(rec *recording.Recording, addrs []uint64, totalWait float64, window time.Duration) []float64 {
	return live.LockSeries(rec, addrs, totalWait, window)
}

// PhysicalFunction returns the function a program point's code is
// compiled into: its own, or the one it is inlined in
// (live.PhysicalFunction).
func PhysicalFunction(p core.ProgramPoint) string { return live.PhysicalFunction(p) }

// PointInFunction reports whether a program point is in function fn, its
// own or one it is inlined in (live.PointInFunction).
func PointInFunction(p core.ProgramPoint, fn string) bool { return live.PointInFunction(p, fn) }

// SeriesOf builds the time series of a live recording's result, per
// window (live.SeriesOf).
func SeriesOf(rec *recording.Recording, res *core.Result, window time.Duration) live.Series {
	return live.SeriesOf(rec, res, window)
}
