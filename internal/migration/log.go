package migration

import (
	"context"
	"log/slog"
)

// logFor returns a logger that puts the execution, state, attempt and key on
// every line, and says whether this is a retry: logs must tell first
// attempts from retries (docs/decisions/0008).
func logFor(base *slog.Logger, inv Invocation, key string) *slog.Logger {
	if base == nil {
		base = slog.Default()
	}
	return base.With(
		slog.String("execution", inv.Execution),
		slog.String("state", inv.State),
		slog.Int("attempt", inv.Attempt+1),
		slog.Bool("retry", inv.Attempt > 0),
		slog.String("key", key),
	)
}

// logOutcome logs the end of a handler call at a level that fits its error.
func logOutcome(ctx context.Context, log *slog.Logger, msg string, err error, attrs ...any) {
	if err == nil {
		log.InfoContext(ctx, msg, attrs...)
		return
	}
	log.WarnContext(ctx, msg+" failed", append(attrs, slog.String("error", err.Error()))...)
}
