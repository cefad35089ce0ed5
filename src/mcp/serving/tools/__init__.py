"""Tool calling: the typed tools of a request, how they reach the prompt, how calls come back out."""
