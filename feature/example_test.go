package feature_test

import (
	"fmt"

	"github.com/sluicehq/sluice/feature"
)

func ExampleParse() {
	c, err := feature.Parse("[rack1*2&rack2*2]")
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Kind(), c.Nodes())
	for _, g := range c.Groups() {
		fmt.Println(g.Expr, g.Count)
	}
	f, _ := feature.Parse("(intel|amd)&ib")
	fmt.Println(f.Match([]string{"amd", "ib"}), f.Match([]string{"amd"}))
	// Output:
	// counts 4
	// rack1 2
	// rack2 2
	// true false
}
