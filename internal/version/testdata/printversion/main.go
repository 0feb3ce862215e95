// Command printversion prints version.String and version.Revision, for TestString's builds.
package main

import (
	"fmt"

	"github.com/bloomd/bloom/internal/version"
)

func main() {
	rev, modified := version.Revision()
	fmt.Printf("%s|%s|%v\n", version.String(), rev, modified)
}
