# Hermes Gateway: the daemon in a container.
#   docker build -t hermes-gateway .
#   docker compose up -d        (see compose.yaml: the volume, the secrets file, the health check)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HERMES_HOME=/data

WORKDIR /opt/hermes
# The locked versions first (hashes checked; a layer that survives code changes), then the
# project without dependencies. The emulators (sandbox/), benchmarks and tests stay out.
COPY requirements-runtime.lock ./
RUN pip install --no-compile --require-hashes -r requirements-runtime.lock
COPY pyproject.toml README.md alembic.ini config.yaml ./
COPY agent ./agent
COPY gateway ./gateway
COPY plugins ./plugins
COPY migrations ./migrations
RUN pip install --no-compile --no-deps . \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin hermes \
    && mkdir -p /data && chown hermes:hermes /data

USER hermes
VOLUME ["/data"]
# The configuration is /data/config.yaml (copy config.yaml there and edit it); secrets come from
# the environment (compose's env_file), never from the image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 CMD ["hermes", "health"]
STOPSIGNAL SIGTERM
CMD ["hermes", "gateway", "run"]
