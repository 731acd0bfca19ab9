// Command effectserver runs the effectserver fixture over stdio.
package main

import (
	"fmt"
	"os"

	"github.com/gatehouse-dev/gatehouse/durable/internal/effectserver"
)

func main() {
	if err := effectserver.Main(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
