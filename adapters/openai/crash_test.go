package openai_test

func crashChild() int { return 2 }
