"""Carrying a plan out: plan -> next step -> act -> observe -> update -> answer."""
