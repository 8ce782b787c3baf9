package core

// KindRule is what every verdict kind must have: the form of its
// headline, the remedies its suggestion is worded from, the evidence
// kinds that state its own fact (each has a sentence in EvidenceText),
// and the words that describe each lock of a
// finding merged over one array of locks. A kind without a full row fails
// TestEveryKindIsComplete.
type KindRule struct {
	Headline string
	Remedies []Remedy
	Evidence []EvidenceKind
	// Merged describes each lock of a merged finding of this kind ("a
	// convoy on each"); "" leaves the kind unsaid.
	Merged string
}

// KindRules holds the rule of every kind.
var KindRules = map[Kind]KindRule{
	KindIOUnderLock: {
		Headline: "<who> wait at ONE program point: <lock>, held across I/O (<call>)",
		Remedies: []Remedy{RemedyMoveIOOff},
		Evidence: []EvidenceKind{EvHolderIO, EvDumpHolderIO, EvJavaDumpHolder},
		Merged:   "each held across I/O",
	},
	KindHotStripe: {
		Headline: "<who> wait at ONE stripe of <array>, which takes <share> of the array's waiting: <lock>",
		Remedies: []Remedy{RemedyHotKey},
		Evidence: []EvidenceKind{EvHotStripe},
	},
	KindSerializedWriter: {
		Headline: "<who> hand ONE lock over <rate> times a second at ONE program point: <lock>",
		Remedies: []Remedy{RemedyCombine, RemedyBiggerGroups},
		Evidence: []EvidenceKind{EvWriterQueue, EvWriterGroups},
		Merged:   "each handed over at a high rate",
	},
	KindLockConvoy: {
		Headline: "<who> wait at ONE program point: <lock>",
		Remedies: []Remedy{RemedyStripe},
		Evidence: []EvidenceKind{EvShortHolds, EvWaiterCPU},
		Merged:   "a convoy on each",
	},
	KindContention: {
		Headline: "<time> lost waiting for ONE lock: <lock>, or <who> take turns on ONE lock",
		Remedies: []Remedy{RemedyShorten, RemedyCoalesceIO, RemedyTurns, RemedyGIL, RemedyGVL},
		Evidence: []EvidenceKind{EvWaiterCPU, EvTurnsHandoff, EvWaitersDoIO},
	},
	KindSpinConvoy: {
		Headline: "<who> sit (or spin) at ONE program point: busy-wait in <point>",
		Remedies: []Remedy{RemedyPark},
		Evidence: []EvidenceKind{EvSpinLoop, EvTightLoop, EvYieldLoop, EvGoSpinCPU},
		Merged:   "each spun on",
	},
	KindCPUSaturation: {
		Headline: "<n> threads wait for a CPU on average: <who> want more than the <n> CPUs the process may use",
		Remedies: []Remedy{RemedyFewerThreads},
		Evidence: []EvidenceKind{EvRunQueue, EvRunnableShare},
	},
	KindWriterStarvation: {
		Headline: "<writers> wait <mean> per acquisition for ONE reader-writer lock while <readers> flow: <lock>",
		Remedies: []Remedy{RemedyWriterPref},
		Evidence: []EvidenceKind{EvWriterStarved},
	},
	KindRuntimeLock: {
		Headline: "<time> lost on a lock internal to the Go runtime in <function>",
		Remedies: []Remedy{RemedyRuntimeLock},
		Evidence: []EvidenceKind{EvRuntimeLock},
	},
	KindKernelObjectLock: {
		Headline: "<who> sleep in the kernel at ONE program point: <object>, held by the thread that wakes them",
		Remedies: []Remedy{RemedyFileLock, RemedyMmapLock, RemedyPipeWriter},
		Evidence: []EvidenceKind{EvKernelWaits, EvKernelHolder},
		Merged:   "each a lock the kernel holds",
	},
	KindPolledLock: {
		Headline: "<who> poll ONE lock at ONE program point: <object>, <rate> failed tries a second",
		Remedies: []Remedy{RemedyBlockingLock},
		Evidence: []EvidenceKind{EvPolledTries, EvPolledHolder},
		Merged:   "each polled",
	},
}
