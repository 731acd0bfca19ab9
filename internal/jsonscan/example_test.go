package jsonscan_test

import (
	"fmt"

	"github.com/gatehouse-dev/gatehouse/internal/jsonscan"
)

func ExampleObject() {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x"}}`)
	var method, params []byte
	ok := jsonscan.Object(msg, func(key []byte, escaped bool, val []byte) bool {
		switch string(key) {
		case "method":
			method = val
		case "params":
			params = val
		}
		return true
	})
	fmt.Println(ok, string(method), string(params))
	// Output: true "tools/call" {"name":"x"}
}

func ExampleValue() {
	v, rest, ok := jsonscan.Value([]byte(` [1, {"a": 2}] , "next"`))
	fmt.Printf("%v %s |%s|\n", ok, v, rest)
	// Output: true [1, {"a": 2}] | , "next"|
}
