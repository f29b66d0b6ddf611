"""Social Gym over the network: the shared server stack and the OpenEnv-protocol env server.

- :mod:`socialgym_agents.serve.sessions` -- bounded session store: secret tokens, idle reaper, worker thread.
- :mod:`socialgym_agents.serve.app` -- app factory (lifespan, /health, errors) and the 127.0.0.1-first launcher.
- :mod:`socialgym_agents.serve.game_session` -- one seat of any game against policies, protocol-neutral.
- :mod:`socialgym_agents.serve.openenv_app` -- the OpenEnv 0.3 WebSocket/HTTP routes (``socialgym serve-env``).

Needs the ``serve`` extra (FastAPI, uvicorn); nothing here imports OpenEnv itself, whose client
is what drives the server in the tests.
"""
