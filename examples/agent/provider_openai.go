package main

import (
	"context"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/gatehouse-dev/gatehouse/adapters/openai"
	"github.com/gatehouse-dev/gatehouse/adapters/openai/openaitest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

func openaiLocal(chat bool) func(context.Context, []reply) (loop.Model, func() int, func(), error) {
	return func(_ context.Context, rs []reply) (loop.Model, func() int, func(), error) {
		var replies []openaitest.Reply
		for _, r := range rs {
			or := openaitest.Reply{Text: r.Text}
			for _, c := range r.Calls {
				or.Calls = append(or.Calls, openaitest.Call{ID: c.ID, Name: c.Name, Args: c.Args})
			}
			replies = append(replies, or)
		}
		srv := openaitest.NewServer(replies...)
		client := oai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("local"), option.WithMaxRetries(0))
		requests := func() int { return srv.Requests() }
		if chat {
			return openai.NewChatModel(client, "local-model"), requests, srv.Close, nil
		}
		return openai.NewResponsesModel(client, "local-model"), requests, srv.Close, nil
	}
}

func openaiReal(chat bool) func(context.Context, string) (loop.Model, error) {
	return func(_ context.Context, model string) (loop.Model, error) {
		if model == "" {
			model = string(shared.ChatModelGPT6_1Terra)
		}
		if chat {
			return openai.NewChatModel(oai.NewClient(), model), nil // OPENAI_API_KEY
		}
		return openai.NewResponsesModel(oai.NewClient(), model), nil
	}
}
