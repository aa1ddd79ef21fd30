package service

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/moq-export/moq-export/record"
)

// SetListen gives the service the publishers of the command's --listen
// (a record.ServerSource), for the API's starts with "listen": true.
func (s *Service) SetListen(src record.Source) {
	s.mu.Lock()
	s.listen = src
	s.mu.Unlock()
}

// listenSource returns the --listen source once a publisher has announced
// broadcast on it, waiting until ctx ends: a request for a broadcast no
// publisher announces is answered 404 and creates nothing.
func (s *Service) listenSource(ctx context.Context, broadcast string, wait time.Duration) (record.Source, error) {
	s.mu.Lock()
	src := s.listen
	s.mu.Unlock()
	if src == nil {
		return nil, &requestError{code: http.StatusConflict, msg: "this recorder has no --listen: run it with --listen ADDR to record publishers through the API"}
	}
	feed, err := src.Announced(ctx)
	if err != nil {
		return nil, &requestError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("--listen: %v", err)}
	}
	defer feed.Close()
	for {
		a, err := feed.Next(ctx)
		switch {
		case err == nil && a.Active && a.Path == broadcast:
			return src, nil
		case err == nil:
			continue
		case ctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled):
			return nil, &requestError{code: http.StatusNotFound, msg: fmt.Sprintf("no publisher on --listen announced broadcast %q within %v", broadcast, wait)}
		default:
			return nil, &requestError{code: http.StatusServiceUnavailable, msg: fmt.Sprintf("--listen: %v", err)}
		}
	}
}
