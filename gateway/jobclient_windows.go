package gateway

import (
	"context"
	"errors"
	"os"
)

var errNoJobHost = errors.New("background jobs need a Unix job host: not available on Windows")

func (s *Server) hostRun(ctx context.Context, id string) error { return errNoJobHost }

func (s *Server) hostKey() string { return "" }

func (s *Server) hostCall(ctx context.Context, key string, req hostRequest, start bool) (hostAnswer, error) {
	return hostAnswer{}, errNoJobHost
}

// RunJobHost is not available on Windows.
func RunJobHost(ctx context.Context, opts Options, root, key string, ready *os.File) error {
	return errNoJobHost
}
