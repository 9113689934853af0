# mockbroker, the Kafka-compatible mock broker, as a small image (docs/container.md).
#
#   docker build -t mockbroker .                      # on python:3.11-slim
#   docker run --rm -p 9092:9092 mockbroker           # clients on the host: localhost:9092
#
# BASE may be any Debian-like image with python3 >= 3.11 and its venv module (the tests build on a
# debootstrapped bookworm with python3-venv: scripts/container_engine.sh).  Configuration: MOCKBROKER_*
# environment variables (mockbroker/config/broker_config.py), a TOML file mounted at /etc/mockbroker/mockbroker.toml,
# and the command's own options (`serve -c key=value ...`).
ARG BASE=python:3.11-slim
FROM ${BASE}

# Optional, for builds behind a TLS-intercepting proxy and for a pip cache that outlives the build:
# the path (inside the build, e.g. a `podman build -v` mount) of a CA bundle, and of a pip cache directory.
ARG PIP_CA
ARG PIP_CACHE

ENV PATH=/opt/mockbroker/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# The dependencies first, from pyproject.toml alone: this layer is rebuilt only when pyproject.toml
# changes, not when the sources do.  Every dependency has wheels: no compiler is installed.
WORKDIR /src
COPY docker/pip-install.sh /usr/local/bin/mockbroker-pip-install
COPY pyproject.toml README.md LICENSE ./
RUN python3 -c 'import tomllib; p = tomllib.load(open("pyproject.toml", "rb")); \
print("\n".join(p["build-system"]["requires"] + p["project"]["dependencies"]))' > /tmp/requirements.txt \
 && mockbroker-pip-install /opt/mockbroker -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# Then mockbroker itself, with the setuptools installed above (no download), which then goes.
COPY protocol ./protocol
COPY mockbroker ./mockbroker
RUN mockbroker-pip-install /opt/mockbroker --no-deps --no-build-isolation . \
 && /opt/mockbroker/bin/pip uninstall -q -y setuptools \
 && cd / && rm -rf /src /usr/local/bin/mockbroker-pip-install \
 && mockbroker --version

COPY docker/entrypoint.sh /usr/local/bin/mockbroker-entrypoint
RUN mkdir -p /etc/mockbroker \
 && echo 'mockbroker:x:10001:10001:mockbroker:/nonexistent:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'mockbroker:x:10001:' >> /etc/group
WORKDIR /
USER 10001:10001

# 9092: the first listener (INTERNAL in docker-compose.yml); 19092: a second one (EXTERNAL)
EXPOSE 9092 19092
# A real ApiVersions round trip with the broker on 127.0.0.1:9092 (mockbroker/probe.py)
HEALTHCHECK --interval=5s --timeout=4s --start-period=10s --retries=3 \
    CMD ["mockbroker", "probe", "--timeout", "3"]
ENTRYPOINT ["mockbroker-entrypoint"]
CMD ["serve", "--host", "0.0.0.0"]
