// Package openai is the concierge's provider adapter for an
// OpenAI-compatible chat-completions API: Client.Answer posts
// {base}/chat/completions with the API key as a bearer token, a system
// prompt that holds the shop's data and tells the model to answer from it
// only, the customer's message as the user message, and
// response_format {"type":"json_object"}; the model's JSON
// {"answer", "confidence", "sources"} becomes a concierge.Answer.
//
// What leaves the process is the minimum: the shop's name, the customer's
// first name, the orders' non-personal fields (name, statuses, created
// time, tracking), the merchant's policies and the inbound text with any
// e-mail address or phone number in it replaced. The conversation's
// history is not sent. The key, the question and the model's free text
// never appear in an error.
//
// A model output that is not the asked-for JSON (malformed, cut short by
// the token limit, filtered, refused, a confidence out of range) is not an
// error: it is an Answer with no text, confidence 0 and Escalation
// concierge.ReasonInvalidOutput, which the rules send to a human. Sources
// the model names that are not in the question's data are dropped. A
// failure to get an answer at all is a *concierge.ProviderError: 429 (but
// an exhausted quota), 408, 409 and 5xx are retryable with the
// Retry-After hint, other 4xx final.
//
// It does not retry, cache or record anything, and reads no environment:
// the base URL, key, model, HTTP client, timeout and clock come in Config.
//
// It imports the standard library, concierge and channels (for the
// Retry-After parsing the messaging clients share).
package openai
