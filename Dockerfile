# The OpenEnv-compatible env server: every Social Gym game, one seat per session.
#   docker build -t socialgym-env .
#   docker run --rm -p 127.0.0.1:8000:8000 socialgym-env
# Inside the container the server must bind 0.0.0.0 to be reachable through the published
# port; publish it on 127.0.0.1 (as above) unless other machines should reach it.
FROM python:3.11-slim

WORKDIR /app
COPY pyproject.toml setup.cfg README.md ./
COPY socialgym_env ./socialgym_env
COPY socialgym_agents ./socialgym_agents
COPY socialgym_benchmarks ./socialgym_benchmarks
COPY socialgym_training ./socialgym_training
RUN pip install --no-cache-dir ".[serve]"

RUN useradd --create-home socialgym
USER socialgym
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
CMD ["socialgym", "serve-env", "--host", "0.0.0.0", "--allow-remote", "--port", "8000"]
