// Package eino connects Gatehouse's durable tool calls and run loop to
// eino (github.com/cloudwego/eino).
package eino
