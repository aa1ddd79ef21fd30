package cli

import (
	"context"
	"errors"
	"log/slog"
)

// dial connects to the URL.
func dial(ctx context.Context, cfg *Config, log *slog.Logger) (Source, error) {
	return nil, errors.New("recording from a relay needs package subscribe, which this build lacks; record the built-in demo without a URL")
}

// listen accepts publishers on --listen.
func (a *app) listen(ctx context.Context) error {
	return errors.New("--listen needs package subscribe, which this build lacks")
}
