package lastuse

import (
	"context"
	"fmt"
)

// DeleteShop deletes the request counts of an erased shop and the last
// use (time and client address) of its tokens: tokenIDs, and every token
// counted under the shop. It zeroes the deleted cells (secure_delete) and
// truncates the WAL, so the addresses survive in no page of the files.
func (s *Store) DeleteShop(ctx context.Context, shopID string, tokenIDs []string) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("erase last uses: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA secure_delete = ON`); err != nil {
		return fmt.Errorf("erase last uses: %w", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("erase last uses: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM last_used WHERE token_id IN (SELECT token_id FROM request_counts WHERE shop_id = ?)`, shopID); err != nil {
		return fmt.Errorf("erase last uses: %w", err)
	}
	for _, id := range tokenIDs {
		if _, err := tx.ExecContext(ctx, `DELETE FROM last_used WHERE token_id = ?`, id); err != nil {
			return fmt.Errorf("erase last uses: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM request_counts WHERE shop_id = ?`, shopID); err != nil {
		return fmt.Errorf("erase request counts: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("erase last uses: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("erase last uses: checkpoint: %w", err)
	}
	return nil
}
