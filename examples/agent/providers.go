package main

import (
	"context"

	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// provider is one adapter as the example drives it.
type provider struct {
	// keyEnv names the API key's environment variable (for -real).
	keyEnv string
	// real returns a model on the provider's API.
	real func(ctx context.Context, model string) (loop.Model, error)
	// local starts the adapter's wire-format server scripted with the
	// replies and returns a model on it, its request count and its close.
	local func(ctx context.Context, replies []reply) (loop.Model, func() int, func(), error)
}

// providers is the table of adapters, by -provider name.
func providers() map[string]provider {
	return map[string]provider{
		"openai":      {keyEnv: "OPENAI_API_KEY", real: openaiReal(false), local: openaiLocal(false)},
		"openai-chat": {keyEnv: "OPENAI_API_KEY", real: openaiReal(true), local: openaiLocal(true)},
		"anthropic":   {keyEnv: "ANTHROPIC_API_KEY", real: anthropicReal, local: anthropicLocal},
		"eino":        {keyEnv: "OPENAI_API_KEY", real: einoReal, local: einoLocal},
		"fantasy":     {keyEnv: "ANTHROPIC_API_KEY", real: fantasyReal, local: fantasyLocal},
	}
}
