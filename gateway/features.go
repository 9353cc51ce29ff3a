package gateway

// Features are what a gateway's configuration offers beyond running commands: the
// fronts list their tools (and the system prompt its lines) from them, so that what
// cmdgate tells a model is true of the running configuration.
type Features struct {
	// Jobs: background jobs (/v1/jobs, the job_* tools).
	Jobs bool
	// Tasks: per-task Docker environments (/v1/tasks, the task_* tools); TaskOnly: every
	// command runs in a task (sandbox docker).
	Tasks, TaskOnly bool
	// Outputs: cut outputs are kept for paging (/v1/outputs, read_output).
	Outputs bool
	// Readonly: files are on the read-only allowlist (/v1/execute, execute).
	Readonly bool
}

// FeaturesOf are the Features a Server with opts offers, found without starting one.
func FeaturesOf(opts Options) Features {
	return Features{
		Jobs:     !opts.Jobs.Disabled,
		Tasks:    opts.Tasks.Enabled || opts.Sandbox == SandboxDocker,
		TaskOnly: opts.Sandbox == SandboxDocker,
		Outputs:  opts.Output.MaxBytes >= 0,
		Readonly: len(opts.Readonly.Allow) > 0,
	}
}

// Features are what s offers.
func (s *Server) Features() Features {
	return Features{
		Jobs:     s.jobStore != nil,
		Tasks:    s.tasks != nil,
		TaskOnly: s.opts.Sandbox == SandboxDocker,
		Outputs:  s.outputs != nil,
		Readonly: s.readonly != nil,
	}
}
