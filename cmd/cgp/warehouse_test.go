package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With --warehouse sqlite the server ships customers to the warehouse as
// they change, and goes on shipping after a replay switched its read models.
func TestWarehouseShipsCustomersAcrossAReplay(t *testing.T) {
	dir := t.TempDir()
	s := startServerWith(t, dir, func(c *Config) {
		c.Warehouse = warehouseSQLite
		c.versionPoll = 20 * time.Millisecond
	})
	defer s.stop()
	tn := newTenant(t, dir, "warehouse.example.com", "agency", "customers:read")
	waitForToken(t, s, tn)
	for i := range 5 {
		s.deliver(t, tn, "customers/create", fmt.Sprintf("wh-%d", i),
			customerPayload(int64(100+i), fmt.Sprintf("wh%d@warehouse.example.com", i), 0, "0.00", "2026-11-01T10:00:00-05:00"))
	}
	wh := openVersion(t, filepath.Join(dir, "warehouse.db"))
	shipped := func(email string) bool {
		var n int
		err := wh.QueryRow(`SELECT COUNT(*) FROM customers WHERE shop_id = ? AND email = ? AND _deleted = 0`, tn.shopID, email).Scan(&n)
		return err == nil && n == 1
	}
	eventually(t, 20*time.Second, "the customers shipped", func() bool {
		for i := range 5 {
			if !shipped(fmt.Sprintf("wh%d@warehouse.example.com", i)) {
				return false
			}
		}
		return true
	})

	replayCLI(t, dir)
	eventually(t, 15*time.Second, "the server switches", func() bool {
		return strings.Contains(s.logs.String(), "read models switched to the replayed version")
	})
	s.deliver(t, tn, "customers/create", "wh-after", customerPayload(200, "after@warehouse.example.com", 0, "0.00", "2026-11-01T10:00:00-05:00"))
	eventually(t, 20*time.Second, "a customer recorded after the switch shipped", func() bool { return shipped("after@warehouse.example.com") })
}
