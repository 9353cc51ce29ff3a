package linux

// Idle reports whether the pool is full and no init is being taken down: the state
// between an agent's commands, for the benchmark.
func (e *Executor) Idle() bool {
	return len(e.pool) == cap(e.pool) && e.releasing.Load() == 0
}

// StaleCgroup is staleCgroup.
var StaleCgroup = staleCgroup
