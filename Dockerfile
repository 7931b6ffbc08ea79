# syntax=docker/dockerfile:1
# The Affidavit service and its ingestion worker, for PostgreSQL deployments (compose.yaml).
# Build:  docker build -t affidavit .
# Two stages: the build stage installs the package into a virtualenv with the README's
# install command (plus the postgres extra); the runtime stage holds that virtualenv and
# nothing else: no compiler, no pip cache, no source tree. It runs as an unprivileged user
# and makes no network call of its own at run time: models, when used, are files you mount.

ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
WORKDIR /src
COPY pyproject.toml README.md CHANGELOG.md ./
COPY src ./src
COPY examples ./examples
RUN python3 -m venv /opt/affidavit \
 && /opt/affidavit/bin/pip install --no-cache-dir '.[postgres]'

FROM ${PYTHON_IMAGE}
RUN groupadd --system --gid 10001 affidavit \
 && useradd --system --uid 10001 --gid affidavit --home-dir /srv/affidavit --create-home \
    --shell /usr/sbin/nologin affidavit
COPY --from=build /opt/affidavit /opt/affidavit
ENV PATH=/opt/affidavit/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HF_HUB_OFFLINE=1 \
    AFFIDAVIT_CONFIG=/etc/affidavit/affidavit.toml
USER affidavit:affidavit
WORKDIR /srv/affidavit
EXPOSE 8080
# /healthz: the process answers. Orchestrators should gate traffic on /readyz (compose.yaml).
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python3", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4).status == 200 else 1)"]
ENTRYPOINT ["affidavit"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--workers", "2"]
