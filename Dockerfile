# syntax=docker/dockerfile:1
# The workerclass image: the webhook (`serve webhook`) and the controller (`serve controller`).
#
#   VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
#   docker build --build-arg VERSION="$VERSION" -t ghcr.io/cozystack/cozystack/workerclass:v"$VERSION" .
#
# The tag is the package version: `workerclass manifests` names exactly that image by default,
# and the build fails when VERSION is not the version of the wheel it builds.
# Runs as the numeric non-root user 65532:65532 (the manifests' runAsUser/runAsGroup) and needs
# no writable path: byte code is compiled at build time and never written at run time, so the
# manifests' readOnlyRootFilesystem holds.

ARG PYTHON=3.11

FROM python:${PYTHON}-slim AS build
ARG VERSION
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist . \
 && if [ -n "$VERSION" ] && [ ! -f "/dist/workerclass-${VERSION}-py3-none-any.whl" ]; then \
      echo "VERSION=$VERSION is not the package version: $(ls /dist)" >&2; exit 1; \
    fi
RUN python -m venv /opt/workerclass \
 && /opt/workerclass/bin/pip install --no-cache-dir "$(ls /dist/workerclass-*.whl)[controller]" \
 && /opt/workerclass/bin/pip uninstall --yes pip \
 && /opt/workerclass/bin/python -m compileall -q /opt/workerclass \
 && /opt/workerclass/bin/workerclass --version

FROM python:${PYTHON}-slim AS runtime
ARG VERSION
LABEL org.opencontainers.image.title="workerclass" \
      org.opencontainers.image.description="Cozystack worker classes: admission webhook and controller" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="https://github.com/cozystack/cozystack" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/workerclass /opt/workerclass
ENV PATH=/opt/workerclass/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["workerclass"]
CMD ["--help"]
