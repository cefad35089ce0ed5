# syntax=docker/dockerfile:1
# mcp2026: `serve` (the engine, port 8000; gRPC 50051 when enabled) or `gateway` (port 8080).
# The model cache is a volume (/models, $MCP_HOME): `mcp2026 pull` fills it once, every replica
# reads it; nothing is fetched from a model hub at run time. Runs as uid 10001, never root.
#   docker build -t mcp2026/mcp2026:0.1.0 .
#   docker run -v mcp-models:/models -v $PWD/mcp-config.yaml:/etc/mcp2026/mcp-config.yaml:ro -p 8000:8000 mcp2026/mcp2026:0.1.0

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
# Debian's compiler for the native CPU kernels (setup.py); bookworm's versions are fixed by the base image.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY constraints constraints
COPY src src
# torch first, the CPU build pinned by constraints/cpu.txt, as `make install` does
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
RUN python -m venv /opt/mcp2026 \
    && /opt/mcp2026/bin/pip install --no-cache-dir -c constraints/cpu.txt --index-url "${TORCH_INDEX_URL}" torch \
    && /opt/mcp2026/bin/pip install --no-cache-dir -c constraints/cpu.txt '.[serve,gateway,governance]'

FROM ${PYTHON_IMAGE}
# libgomp1: the kernels' OpenMP runtime (torch's copy is used when torch loads first);
# libatomic1: regopy's Rego interpreter (the policy engine of serving.governance) links it
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libgomp1 libatomic1 \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 mcp \
    && useradd --uid 10001 --gid mcp --no-create-home --home-dir /models --shell /usr/sbin/nologin mcp \
    && mkdir -p /models /etc/mcp2026 \
    && chown mcp:mcp /models
COPY --from=build /opt/mcp2026 /opt/mcp2026
ENV PATH=/opt/mcp2026/bin:$PATH \
    MCP_HOME=/models \
    HF_HUB_OFFLINE=1 \
    PYTHONUNBUFFERED=1
VOLUME ["/models"]
USER 10001:10001
WORKDIR /models
EXPOSE 8000 8080 50051
# /health answers 200 while the process serves (for the gateway, run the container with
# --health-cmd against port 8080); Kubernetes uses its own probes (deploy/k8s).
HEALTHCHECK --interval=15s --timeout=3s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=2).status != 200)"]
ENTRYPOINT ["mcp2026"]
CMD ["serve", "--config", "/etc/mcp2026/mcp-config.yaml"]
