package pgtest_test

import (
	"fmt"

	"github.com/sluicehq/sluice/accounting/postgres/internal/pgtest"
)

func ExampleServer_DSN() {
	s := &pgtest.Server{Port: 54321}
	fmt.Println(s.DSN("sluice_test"))
	// Output: host=127.0.0.1 port=54321 user=postgres dbname=sluice_test sslmode=disable
}
