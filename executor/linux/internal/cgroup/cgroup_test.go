package cgroup

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestNewInvalidName(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", ".", "..", "a/b", "/a", "../a", "a/..", "a\x00b", strings.Repeat("a", 256)} {
		t.Run("", func(t *testing.T) {
			t.Parallel()
			g, err := (&Manager{}).New(name, Limits{})
			if !errors.Is(err, ErrInvalidName) {
				t.Errorf("New(%q) = %v, %v, want %v", name, g, err, ErrInvalidName)
			}
		})
	}
}

func TestNewInvalidLimits(t *testing.T) {
	t.Parallel()
	for _, l := range []Limits{{Memory: -1}, {Pids: -1}, {CPU: -0.5}, {CPU: math.NaN()}, {CPU: math.Inf(1)}} {
		if _, err := (&Manager{}).New("a", l); !errors.Is(err, ErrInvalidLimits) {
			t.Errorf("New(%+v) error = %v, want %v", l, err, ErrInvalidLimits)
		}
	}
}

func TestZeroManager(t *testing.T) {
	t.Parallel()
	var m Manager
	if v := m.Version(); v != 0 {
		t.Errorf("Version() = %d, want 0", v)
	}
	if in := m.InForce(Limits{Memory: 1, Pids: 1, CPU: 1}); len(in) != 0 {
		t.Errorf("InForce() = %v, want none", in)
	}
	if u := m.Unavailable(); len(u) != 3 {
		t.Errorf("Unavailable() = %v, want a reason for each of memory, pids, cpu", u)
	}
	if _, err := m.New("a", Limits{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("New() error = %v, want %v", err, ErrUnavailable)
	}
}

func TestCPUQuota(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cpus float64
		want int64
	}{
		{1.5, 150000},
		{1, 100000},
		{0.25, 25000},
		{0.001, 1000}, // the kernel's minimum
		{16, 1600000},
	} {
		if got := cpuQuota(tc.cpus); got != tc.want {
			t.Errorf("cpuQuota(%v) = %d, want %d", tc.cpus, got, tc.want)
		}
	}
}
