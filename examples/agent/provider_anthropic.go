package main

import (
	"context"
	"os"

	fanthropic "charm.land/fantasy/providers/anthropic"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/gatehouse-dev/gatehouse/adapters/anthropic"
	"github.com/gatehouse-dev/gatehouse/adapters/anthropic/anthropictest"
	ghfantasy "github.com/gatehouse-dev/gatehouse/adapters/fantasy"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

func anthropicLocal(_ context.Context, rs []reply) (loop.Model, func() int, func(), error) {
	var replies []anthropictest.Reply
	for _, r := range rs {
		ar := anthropictest.Reply{Text: r.Text}
		for _, c := range r.Calls {
			ar.Calls = append(ar.Calls, anthropictest.Call{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		replies = append(replies, ar)
	}
	srv := anthropictest.NewServer(replies...)
	client := sdk.NewClient(option.WithBaseURL(srv.URL), option.WithAPIKey("local"), option.WithMaxRetries(0))
	return &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: "local-model"}}, srv.Requests, srv.Close, nil
}

func anthropicReal(_ context.Context, model string) (loop.Model, error) {
	if model == "" {
		model = string(sdk.ModelClaudeSonnet5_5)
	}
	client := sdk.NewClient() // ANTHROPIC_API_KEY
	return &anthropic.Model{Client: &client, Params: sdk.MessageNewParams{Model: sdk.Model(model)}}, nil
}

// fantasy's OpenAI provider is built for an older openai-go than the
// openai adapter's, and one binary links one version: the example drives
// fantasy through its Anthropic provider (and the Messages wire server).
func fantasyModel(ctx context.Context, opts []fanthropic.Option, model string) (loop.Model, error) {
	provider, err := fanthropic.New(opts...)
	if err != nil {
		return nil, err
	}
	lm, err := provider.LanguageModel(ctx, model)
	if err != nil {
		return nil, err
	}
	return ghfantasy.NewModel(lm, nil), nil
}

func fantasyLocal(ctx context.Context, rs []reply) (loop.Model, func() int, func(), error) {
	var replies []anthropictest.Reply
	for _, r := range rs {
		ar := anthropictest.Reply{Text: r.Text}
		for _, c := range r.Calls {
			ar.Calls = append(ar.Calls, anthropictest.Call{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		replies = append(replies, ar)
	}
	srv := anthropictest.NewServer(replies...)
	m, err := fantasyModel(ctx, []fanthropic.Option{fanthropic.WithBaseURL(srv.URL), fanthropic.WithAPIKey("local")}, "local-model")
	if err != nil {
		srv.Close()
		return nil, nil, nil, err
	}
	return m, srv.Requests, srv.Close, nil
}

func fantasyReal(ctx context.Context, model string) (loop.Model, error) {
	if model == "" {
		model = string(sdk.ModelClaudeSonnet5_5)
	}
	return fantasyModel(ctx, []fanthropic.Option{fanthropic.WithAPIKey(os.Getenv("ANTHROPIC_API_KEY"))}, model)
}
