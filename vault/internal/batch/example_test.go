package batch_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/cgp-platform/cgp/vault/internal/batch"
)

// A Batcher whose commit upper-cases a batch of words in one call.
func Example() {
	b := batch.New(batch.Config[string, string]{
		Max: 64,
		Commit: func(words []string, out []string) (uint64, error) {
			for i, w := range words {
				out[i] = strings.ToUpper(w)
			}
			return uint64(len(words)), nil
		},
	})
	defer b.Close()
	res, err := b.Do(context.Background(), "key")
	fmt.Println(res, err)
	// Output: KEY <nil>
}
