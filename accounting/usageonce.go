package accounting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"
)

// RecordGPUUsageOnce stores us (RecordGPUUsage) over a one-connection pool
// opened for this call only: a slurmd hook stores once per run, so keeping
// a connection open would only hold a server slot per node.
func RecordGPUUsageOnce(ctx context.Context, url string, us []GPUUsage, log *slog.Logger) error {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return errors.New("database URL is not a valid PostgreSQL URL or DSN")
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL at %s:%d: %w", cfg.ConnConfig.Host, cfg.ConnConfig.Port, err)
	}
	defer pool.Close()
	_, err = New(pool, log).RecordGPUUsage(ctx, us)
	return err
}
