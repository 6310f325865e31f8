"""Framework adapters: the claim check for agents that already run on a framework.

One module per framework, each behind its own extra, each importing its framework and nothing
else does (`import s3claim` never imports one):

- `s3claim.integrations.openai_agents` (`s3claim[openai-agents]`): `claim_check_tools`
- `s3claim.integrations.langchain` (`s3claim[langchain]`): `ClaimCheckMiddleware`
- `s3claim.integrations.pydantic_ai` (`s3claim[pydantic-ai]`): `ClaimCheckToolset`

They are thin: each translates its framework's hook into the result boundary, the admission
path and the claim tools (`s3claim.claim_tools.claim_tools`), so handles, markers and windows
are the runner's own.
"""
