// Package anthropic connects Gatehouse to the Anthropic Go SDK.
package anthropic
