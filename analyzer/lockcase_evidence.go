package analyzer

// The evidence each lock verdict adds to the facts its builder measured.

// ioEvidence is what shows the holders' I/O.
func ioEvidence(c *lockCase) []Evidence { return c.io.ev }

// writerEvidence shows that each producer waits for one hand-off, not
// behind a crowd.
func writerEvidence(c *lockCase) []Evidence {
	var ev []Evidence
	if c.groupsOnly() {
		ev = append(ev, fact("events", EvWriterGroups, "passed", c.passOn, "woken", c.passOnOf,
			"share", float64(c.passOn)/float64(c.passOnOf), "group", float64(c.passOnOf)/float64(max(1, c.passOn)), "p50_s", c.p50, "holds", float64(c.lockWait())/float64(c.holdBound)))
	} else {
		ev = append(ev, fact("events", EvWriterQueue, "p50_s", c.p50, "holds", float64(c.lockWait())/float64(c.holdBound),
			"hold_bound_s", c.holdBound, "p99_s", c.p99, "tail", float64(c.p99)/max(1, float64(c.p50)), "wake_latency_s", c.wakeLatency))
	}
	return append(ev, waiterCPUEvidence(c)...)
}

// hotStripeEvidence shows how the array's waiting falls on one stripe.
func hotStripeEvidence(c *lockCase) Evidence {
	a := c.array
	return fact("futex", EvHotStripe, "share", a.hotShare, "elements", a.elements,
		"wait_s", seconds(c.waitNS), "array_wait_s", seconds(a.waitNS), "array", a.base, "lock", lockName(&c.id))
}

// convoyEvidence shows that the holds are short and the waiters queue.
func convoyEvidence(c *lockCase) []Evidence {
	var ev []Evidence
	if c.path == pathLive && c.holdBound > 0 {
		holds := 0.0
		if c.p50 > 0 {
			holds = float64(c.p50) / float64(c.holdBound)
		}
		ev = append(ev, fact("futex", EvShortHolds, "hold_bound_s", c.holdBound, "waiters", c.participants,
			"p50_s", c.p50, "holds", holds))
	}
	return append(ev, waiterCPUEvidence(c)...)
}

// contentionEvidence adds where the waiters' CPU goes.
func contentionEvidence(c *lockCase) []Evidence { return waiterCPUEvidence(c) }

// waiterCPUEvidence splits the waiters' sampled CPU (live).
func waiterCPUEvidence(c *lockCase) []Evidence {
	if c.path != pathLive || c.cpuNS == 0 {
		return nil
	}
	cpu := float64(c.cpuNS)
	return []Evidence{fact("oncpu", EvWaiterCPU, "cpu_s", seconds(c.cpuNS),
		"machinery_share", float64(c.machNS)/cpu, "section_share", float64(c.csNS)/cpu,
		"outside_share", float64(c.outsideNS)/cpu, "function", shortFunc(c.cpuFn))}
}

// chainEvidence shows what the holders waited for while holding the lock.
func chainEvidence(c *lockCase) []Evidence {
	var ev []Evidence
	for _, l := range c.chain {
		if c.path == pathGo {
			ev = append(ev, fact("goroutines", EvChainDump, "share", l.share, "what", l.what))
			continue
		}
		ev = append(ev, fact("events", EvChain, "share", l.share, "wait_s", seconds(l.ns), "cycle", l.cycle, "what", l.what))
	}
	return ev
}
