//go:build !linux

package cgroup

import "errors"

// Detect reports no usable controller: cgroups exist only on Linux.
func Detect() *Manager {
	m := &Manager{unavailable: map[string]string{}}
	for _, c := range limitControllers {
		m.unavailable[c] = "cgroups exist only on Linux"
	}
	return m
}

// New refuses: cgroups exist only on Linux. It returns ErrUnavailable.
func (m *Manager) New(name string, l Limits) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	if err := l.validate(); err != nil {
		return nil, err
	}
	return nil, ErrUnavailable
}

// Add refuses: cgroups exist only on Linux.
func (g *Group) Add(pid int) error { return errors.ErrUnsupported }

// OOMKilled is false: cgroups exist only on Linux.
func (g *Group) OOMKilled() bool { return false }

// Empty refuses.
func (g *Group) Empty() (bool, error) { return false, errors.ErrUnsupported }

// Kill refuses: cgroups exist only on Linux.
func (g *Group) Kill() error { return errors.ErrUnsupported }

// Remove refuses: cgroups exist only on Linux.
func (g *Group) Remove() error { return errors.ErrUnsupported }

// RemoveStale does nothing.
func (m *Manager) RemoveStale(func(string) bool) error { return nil }
