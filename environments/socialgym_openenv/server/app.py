"""The Social Gym env server as an OpenEnv environment (``openenv.yaml``: ``server.app:app``).

It is ``socialgym serve-env``'s app (socialgym_agents/serve/openenv_app.py) with its defaults;
``main`` binds every address by default, as a container must (``uv run server``, ``python -m
server.app``, the Space's Dockerfile). On a workstation use ``socialgym serve-env``, which binds
127.0.0.1.
"""
import argparse

from socialgym_agents.serve.app import serve
from socialgym_agents.serve.openenv_app import create_openenv_app

app = create_openenv_app()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Serve every Social Gym game over OpenEnv's protocol.")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    arguments = parser.parse_args(argv)
    serve(app, host=arguments.host, port=arguments.port, allow_remote=True)


if __name__ == "__main__":
    main()
