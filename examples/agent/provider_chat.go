package main

import (
	"context"
	"os"

	einoopenai "github.com/cloudwego/eino-ext/components/model/openai"

	ghein "github.com/gatehouse-dev/gatehouse/adapters/eino"
	"github.com/gatehouse-dev/gatehouse/adapters/eino/einotest"
	"github.com/gatehouse-dev/gatehouse/durable/loop"
)

// defaultChatModel is the model eino and fantasy ask for on OpenAI's API
// when -model is not given.
const defaultChatModel = "gpt-6.1-terra"

// chatScript turns the script into the Chat Completions server's replies.
func chatScript(rs []reply) []einotest.Reply {
	out := make([]einotest.Reply, 0, len(rs))
	for _, r := range rs {
		er := einotest.Reply{Text: r.Text}
		for _, c := range r.Calls {
			er.Calls = append(er.Calls, einotest.Call{ID: c.ID, Name: c.Name, Args: c.Args})
		}
		out = append(out, er)
	}
	return out
}

func einoModel(ctx context.Context, baseURL, key, model string) (loop.Model, error) {
	cm, err := einoopenai.NewChatModel(ctx, &einoopenai.ChatModelConfig{BaseURL: baseURL, APIKey: key, Model: model})
	if err != nil {
		return nil, err
	}
	return ghein.NewModel(cm), nil
}

func einoLocal(ctx context.Context, rs []reply) (loop.Model, func() int, func(), error) {
	srv := einotest.NewServer(chatScript(rs)...)
	m, err := einoModel(ctx, srv.URL, "local", "local-model")
	if err != nil {
		srv.Close()
		return nil, nil, nil, err
	}
	return m, srv.Requests, srv.Close, nil
}

func einoReal(ctx context.Context, model string) (loop.Model, error) {
	if model == "" {
		model = defaultChatModel
	}
	return einoModel(ctx, "", os.Getenv("OPENAI_API_KEY"), model)
}
