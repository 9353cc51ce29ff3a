package audit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkAppend measures durable appends (each Append returns after its fsync'd
// commit) with 1, 8 and 64 concurrent appenders; records/s is the figure to compare.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("c%d", c), func(b *testing.B) {
			s := openTest(b, b.TempDir(), Options{})
			defer s.Close(context.Background())
			recs := make([]Record, 256)
			for i := range recs {
				recs[i] = sampleDecision(i)
			}
			ctx := context.Background()
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						if _, err := s.Append(ctx, recs[i%int64(len(recs))]); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
