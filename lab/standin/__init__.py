"""The stand-in model: a model provider's HTTP API served by the lab, because no real provider can
run here (a real one needs a key, costs money, is not deterministic and cannot be faulted). It
is a fake, and says so: replies are made up, deterministic, and show the memory the call carried
("turn 3 as I see it; you first said ...") so a page that lost its history shows amnesia as the
incident's user saw it.

It speaks what apps use -- OpenAI Chat Completions (streamed and not, with the usage chunk),
the OpenAI Responses API, Anthropic Messages and Ollama's /api/chat (one module per protocol,
registered by name) -- and records every call: the messages it carried, stream or not, start and
end, what it returned, the behaviour in force. Per call the lab sets the time to first token,
the per-token delay, the reply's length and a fault (a 429 with Retry-After, a 500, an overload,
a stream cut before its final event, no first token), matched by a text the call's last user
message contains (the lab's probes carry their trial's id).

May import: lab.common."""
