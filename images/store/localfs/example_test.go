package localfs_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cgp-platform/cgp/images/store"
	"github.com/cgp-platform/cgp/images/store/localfs"
)

func Example() {
	dataDir, _ := os.MkdirTemp("", "cgp-example")
	defer os.RemoveAll(dataDir)
	s, err := localfs.New(localfs.Config{Root: filepath.Join(dataDir, "images")})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	digest, size, _ := s.Put(ctx, "shop_1", "img_01", strings.NewReader("result bytes"))
	fmt.Println(digest[:12], size)

	rc, _ := s.Get(ctx, "shop_1", "img_01")
	b, _ := io.ReadAll(rc)
	rc.Close()
	fmt.Println(string(b))

	removed, _ := s.Sweep(ctx, time.Now().Add(-store.DefaultRetention))
	fmt.Println(removed)
	// Output:
	// e515ce935a25 12
	// result bytes
	// 0
}
