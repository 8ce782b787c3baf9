package analyzer

func liveTarget(a *analysis, ld *liveData)                           {}
func liveLockVerdicts(a *analysis, ld *liveData, locks []*lockGroup) {}
func liveSpin(a *analysis, ld *liveData)                             {}
func liveRows(a *analysis, ld *liveData, locks []*lockGroup)         {}
