"""The sessions study (issue 47): the sessions and their scripted model (`script`), and one
side per system, each in its own framework (the peers' sides run in their own venvs)."""
