"""The customer's answer, built only from what the steps observed."""
