"""The model study (`make bench-model`): the spec's claim on a real model on this CPU.

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
- `study`: the passes and runs above, saved to benchmarks/results/model.json;
- `report`: the section and its plot, built from that file whenever the pages are rendered.
"""
