package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DeleteScopes deletes every record of the given scopes (the tokens of an
// erased shop), then truncates the WAL so that their response bodies, which
// may hold personal data, linger neither there nor (secure_delete) in free
// pages. Deleting scopes that have no record is not an error.
func (s *Store) DeleteScopes(ctx context.Context, scopes []string) error {
	if len(scopes) == 0 {
		return nil
	}
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		for _, sc := range scopes {
			if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency_keys WHERE scope = ?`, sc); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete idempotency records: %w", err)
	}
	var busy, logFrames, checkpointed int
	if err := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logFrames, &checkpointed); err != nil {
		return fmt.Errorf("delete idempotency records: checkpoint: %w", err)
	}
	if busy != 0 {
		return errors.New("delete idempotency records: checkpoint blocked by a reader")
	}
	return nil
}
