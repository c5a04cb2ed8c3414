"""stepwise's composition root: the only package that knows every other one.

`cli` (the `stepwise` command) reads `settings`, opens a `runtime` (storage, tools, agent)
and runs a command: one-shot `commands`, the terminal `chat`, the Telegram bot (`serve`),
the browser `demo`, or the Bot API stand-in (`local_api`). Layers below it: `bot` and
`console` (independent of each other), then `storage`, then `agent_core`.
"""
