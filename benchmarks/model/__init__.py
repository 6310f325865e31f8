"""`make bench-model`: the spec's claim measured on a real model on this machine's CPU.

The conversation is re-sent on every turn, so a tool result that stays inline is paid for in
prefill again and again. These modules replay the counsel scenario's conversations turn by
turn to llama.cpp's OpenAI-compatible server through `OpenAICompatibleProvider`, with one
token of generation, so what is timed is the prefill:

- `server`: llama.cpp's server (llama-cpp-python) as a child process on 127.0.0.1, from its
  own virtual environment;
- `turns`: the scripted runs (claim check, inline, truncation), recorded call by call;
- `prefill`: cold and warm passes over those turns, with the server's own token counts;
- `end_to_end`: `s3claim demo` against the server, and one run where the model calls a tool;
- `fixtures`: the server's exact replies, recorded for the test suite to replay;
- `report`: the section of docs/benchmarks.md and its plot, rendered from the results JSON
  (benchmarks/results/model.json) by both `make bench-model` and `make bench`.
"""
