package core

import "time"

// This file is the one judge: every finding of every path is made by
// Judge, and every lock verdict is chosen by JudgeLock.
//
// Verdict order. Where several verdicts could explain the same waiting,
// the first that the facts support wins:
//
//  1. Locks (JudgeLock): I/O under the lock, then writer starvation, a
//     hot stripe, a serialized writer, threads taking turns, a convoy,
//     and plain contention. Runtime-internal locks (Go) are judged beside them.
//  2. Busy-waits (spin and yield loops): after the locks, since a spin
//     finding claims its threads.
//  3. CPU saturation: last, counting only the threads no spin finding
//     and no lock taken in turns already explains.
//
// The pipeline (package analyzer) runs the steps in that order; merging
// array elements and ranking by score come after every step.

// Verdict is what a path established about one finding: its kind, the
// remedy that follows from it, who and what it concerns, and the facts
// behind it. Judge turns it into a Finding.
type Verdict struct {
	Kind     Kind
	Remedy   Remedy
	Sugg     Sugg
	Headline string

	// Unit is "threads" or "goroutines"; Population how many the process
	// had; Participants how many take part, counted when Counted is set
	// and estimated otherwise.
	Unit         string
	Population   int
	Participants int
	Counted      bool

	WaitSeconds, CPUSeconds float64
	Point                   ProgramPoint
	Releaser                *ProgramPoint
	Lock                    *LockID
	Evidence                []Evidence
	Confidence              Confidence

	// Duration is the recording's, 0 when unknown.
	Duration time.Duration
	// Score, when set, replaces wait plus CPU as the finding's weight in
	// the ranking: CPU saturation weighs only the run-queue time it alone
	// explains.
	Score *float64
}

// Judge makes the finding of a verdict: its suggestion from the remedy,
// and its score and wait share from the figures.
func Judge(v Verdict) Finding {
	f := Finding{
		Kind:         v.Kind,
		Headline:     v.Headline,
		Unit:         v.Unit,
		Population:   v.Population,
		Participants: v.Participants,
		WaitSeconds:  v.WaitSeconds,
		CPUSeconds:   v.CPUSeconds,
		Point:        v.Point,
		Releaser:     v.Releaser,
		Lock:         v.Lock,
		Evidence:     v.Evidence,
		Confidence:   v.Confidence,
		Suggestion:   SuggestFor(v.Remedy, v.Sugg),
	}
	Finish(&f, v.Duration, v.Counted)
	if v.Score != nil {
		f.Score = *v.Score
	}
	return f
}

// JudgeLock turns a significant lock case into a finding: the verdict is
// the first that the case's facts support, in order of how much each
// explains (I/O under the lock explains the waiting outright; starved
// writers of a reader-writer lock wait for the readers' stream, whatever
// else the waiting looks like; a hot stripe says why an already striped
// lock still waits, whatever the hand-offs look like, since more stripes
// is the advice it must stop; a serialized writer pays per hand-off,
// thousands a second, each producer waiting for about one hold; threads taking turns hold the lock long
// while they compute; a convoy says the waiting comes from sharing;
// anything else is contention).
func JudgeLock(c *LockCase, dur time.Duration) Finding {
	id := c.ID
	v := Verdict{
		Unit:         c.Unit,
		Population:   c.Population,
		Participants: c.Participants,
		Counted:      c.Counted,
		WaitSeconds:  Seconds(c.WaitNS),
		CPUSeconds:   Seconds(c.MachNS),
		Point:        c.Point,
		Releaser:     c.Releaser,
		Lock:         &id,
		Duration:     dur,
	}
	ev := append([]Evidence(nil), c.Ev...)
	var r Remedy
	switch {
	case c.IO.Explains && (!c.IO.WaitersDoIO || c.IO.Transfer):
		v.Kind, r = KindIOUnderLock, RemedyMoveIOOff
		ev = append(ioEvidence(c), ev...) // the strongest fact first
	case c.IO.Explains:
		v.Kind, r = KindContention, RemedyCoalesceIO
		ev = append(ioEvidence(c), ev...)
	case c.Turns && c.Interp != "":
		// An interpreter's lock hands over at whatever rate its threads
		// block and wake: its threads take turns running the
		// interpreter, whatever the hand-offs look like.
		v.Kind, r = KindContention, RemedyGIL
		if c.Interp == InterpRuby {
			r = RemedyGVL
		}
	case c.WriterStarved():
		v.Kind, r = KindWriterStarvation, RemedyWriterPref
		ev = append(ev, writerStarvedEvidence(c))
	case c.HotStripe():
		v.Kind, r = KindHotStripe, RemedyHotKey
		ev = append(ev, hotStripeEvidence(c))
	case c.handoffBound():
		v.Kind, r = KindSerializedWriter, RemedyCombine
		if c.groupsOnly() {
			r = RemedyBiggerGroups
		}
		ev = append(ev, writerEvidence(c)...)
	case c.Turns:
		v.Kind, r = KindContention, RemedyTurns
		switch c.Interp {
		case InterpPython:
			r = RemedyGIL
		case InterpRuby:
			r = RemedyGVL
		}
	case c.convoy():
		v.Kind, r = KindLockConvoy, RemedyStripe
		ev = append(ev, convoyEvidence(c)...)
	default:
		v.Kind, r = KindContention, RemedyShorten
		ev = append(ev, contentionEvidence(c)...)
	}
	v.Evidence = append(ev, chainEvidence(c)...)
	v.Remedy, v.Sugg = r, c.sugg()
	v.Headline = headline(c, v.Kind, r)
	v.Confidence = ConfidenceOf(c.Sources, c.Guess || !c.Counted && dur == 0)
	if c.DumpOnly && v.Confidence == ConfidenceHigh {
		v.Confidence = ConfidenceMedium
	}
	return Judge(v)
}
