"""Recognising how customers really write (issue 21), in flow order.

`precision` (what the rule reading must never take as an action: negation, questions
about an action, "not X", retraction, reported speech, confusable ids, unclear amounts),
`normalise` (NFKC, confusable folding, English word forms, synonyms, typos),
`intents` (the intent inventory as data, `intents.toml`, extended by a shop's TOML),
`recognise` (a scorer over the declared examples) and `choices` (the buttons offered when
nothing is recognised). The package is named `recognition` because `agent_core.understanding.understand`
is the existing rule-understanding module, which stays where it is.
"""
