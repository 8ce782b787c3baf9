package collector

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/contend-dev/contend/recording"
)

func TestScratchSmoke(t *testing.T) {
	pid, _ := strconv.Atoi(os.Getenv("SMOKE_PID"))
	if pid == 0 {
		t.Skip("no SMOKE_PID")
	}
	rec, err := Record(context.Background(), Options{PID: pid, Duration: 3 * time.Second}, func(s Stats) {})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(rec.Meta.Counters)
	for v, p := range rec.Profiles {
		fmt.Println(v, len(p.Sample))
	}
	fmt.Println(len(rec.Events), len(rec.Locks))
	os.RemoveAll("/tmp/smoke/rec")
	if err := recording.Write("/tmp/smoke/rec", rec); err != nil {
		t.Fatal(err)
	}
}
