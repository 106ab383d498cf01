package sql

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// UpTo applies the embedded migrations up to version last and no later
// one, each as Up applies it: the database a Fairway binary whose newest
// migration was last left behind. Upgrade tests start from it.
func UpTo(ctx context.Context, conn *pgx.Conn, last int) error {
	ms, err := Migrations()
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, createSchemaTable); err != nil {
		return fmt.Errorf("create fairway_schema: %w", err)
	}
	applied, err := Status(ctx, conn)
	if err != nil {
		return err
	}
	for _, m := range pending(ms, applied) {
		if m.Version > last {
			break
		}
		if err := apply(ctx, conn, m); err != nil {
			return err
		}
	}
	return nil
}
