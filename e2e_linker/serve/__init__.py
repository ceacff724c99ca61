"""The linker as a local web service (``linker serve``): one process holds the model and KB,
many clients send text. Module map: ``config`` (the options), ``errors`` (status + one-line
message), ``limits`` (request size and read deadline, while reading), ``schemas`` (the JSON
bodies), ``bodies`` (request bodies ⇄ documents), ``batching`` (the worker thread that owns
the model and batches concurrent requests), ``page`` (the paste-text page), ``app`` (the
FastAPI application)."""
