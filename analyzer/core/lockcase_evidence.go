package core

// The evidence each lock verdict adds to the facts its builder measured.

// ioEvidence is what shows the holders' I/O.
func ioEvidence(c *LockCase) []Evidence { return c.IO.Ev }

// writerEvidence shows that each producer waits for one hand-off, not
// behind a crowd.
func writerEvidence(c *LockCase) []Evidence {
	var ev []Evidence
	if c.groupsOnly() {
		ev = append(ev, Fact("events", EvWriterGroups, "passed", c.PassOn, "woken", c.PassOnOf,
			"share", float64(c.PassOn)/float64(c.PassOnOf), "group", float64(c.PassOnOf)/float64(max(1, c.PassOn)), "p50_s", c.P50, "holds", float64(c.lockWait())/float64(c.HoldBound)))
	} else {
		ev = append(ev, Fact("events", EvWriterQueue, "p50_s", c.P50, "holds", float64(c.lockWait())/float64(c.HoldBound),
			"hold_bound_s", c.HoldBound, "p99_s", c.P99, "tail", float64(c.P99)/max(1, float64(c.P50)), "wake_latency_s", c.WakeLatency))
	}
	return append(ev, waiterCPUEvidence(c)...)
}

// hotStripeEvidence shows how the array's waiting falls on one stripe.
func hotStripeEvidence(c *LockCase) Evidence {
	a := c.Array
	return Fact("futex", EvHotStripe, "share", a.HotShare, "elements", a.Elements,
		"wait_s", Seconds(c.WaitNS), "array_wait_s", Seconds(a.WaitNS), "array", a.Base, "lock", LockName(&c.ID))
}

// convoyEvidence shows that the holds are short and the waiters queue.
func convoyEvidence(c *LockCase) []Evidence {
	var ev []Evidence
	if c.Path == PathLive && c.HoldBound > 0 {
		holds := 0.0
		if c.P50 > 0 {
			holds = float64(c.P50) / float64(c.HoldBound)
		}
		ev = append(ev, Fact("futex", EvShortHolds, "hold_bound_s", c.HoldBound, "waiters", c.Participants,
			"p50_s", c.P50, "holds", holds))
	}
	return append(ev, waiterCPUEvidence(c)...)
}

// contentionEvidence adds where the waiters' CPU goes.
func contentionEvidence(c *LockCase) []Evidence { return waiterCPUEvidence(c) }

// waiterCPUEvidence splits the waiters' sampled CPU (live).
func waiterCPUEvidence(c *LockCase) []Evidence {
	if c.Path != PathLive || c.CPUNS == 0 {
		return nil
	}
	cpu := float64(c.CPUNS)
	return []Evidence{Fact("oncpu", EvWaiterCPU, "cpu_s", Seconds(c.CPUNS),
		"machinery_share", float64(c.MachNS)/cpu, "section_share", float64(c.CsNS)/cpu,
		"outside_share", float64(c.OutsideNS)/cpu, "function", ShortFuncName(c.CPUFn))}
}

// chainEvidence shows what the holders waited for while holding the lock.
func chainEvidence(c *LockCase) []Evidence {
	var ev []Evidence
	for _, l := range c.Chain {
		if c.Path == PathGo {
			ev = append(ev, Fact("goroutines", EvChainDump, "share", l.Share, "what", l.What))
			continue
		}
		ev = append(ev, Fact("events", EvChain, "share", l.Share, "wait_s", Seconds(l.Ns), "cycle", l.Cycle, "what", l.What))
	}
	return ev
}
