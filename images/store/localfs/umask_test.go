package localfs_test

import "syscall"

// setUmask sets the process umask, so the permission test proves the
// adapter's modes rather than a restrictive default.
func setUmask(mask int) int { return syscall.Umask(mask) }
